package dev.sluice;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The javadoc leads to the guides: every public type of every library module links, in its own
 * comment, the docs page (and section) that explains it, and every module's javadoc opens on an
 * overview page ({@code src/main/javadoc/overview.html}) that links its guides. Each link names a
 * page of docs/ and a heading it has.
 */
class JavadocLinksTest {
  private static final Path ROOT = Path.of("..");
  private static final String DOCS = "https://github.com/sluice-dev/sluice/blob/main/";
  private static final Pattern LINK = Pattern.compile(
      "href=\"" + Pattern.quote(DOCS) + "([\\w/.-]+\\.md)(?:#([\\w-]+))?\"");
  private static final Pattern TYPE = Pattern.compile(
      "^public (?:(?:final|abstract|sealed|non-sealed|static)\\s+)*"
          + "(?:class|interface|record|enum|@interface) (\\w+)", Pattern.MULTILINE);
  private static final Pattern JAVADOC = Pattern.compile("/\\*\\*(.*?)\\*/", Pattern.DOTALL);
  /** Library modules, and their packages that are not API. */
  private static final List<String> LIBRARIES = List.of("sluice-core", "sluice-testkit",
      "sluice-redis", "sluice-jdbc", "sluice-postgres", "sluice-mysql", "sluice-servlet",
      "sluice-webflux", "sluice-micrometer", "sluice-console", "sluice-grpc",
      "sluice-spring-boot-starter", "sluice-server");
  private static final Set<String> NOT_API = Set.of("dev/sluice/internal", "dev/sluice/jdbc");

  /** Each page's anchors, read once. */
  private static final Map<Path, Set<String>> ANCHORS = new HashMap<>();

  /** Problems with the links in {@code text}, or none; how many links it has in {@code found}. */
  private static List<String> check(String where, String text, int[] found) throws IOException {
    List<String> problems = new ArrayList<>();
    Matcher m = LINK.matcher(text);
    while (m.find()) {
      found[0]++;
      Path page = ROOT.resolve(m.group(1));
      if (!Files.exists(page)) {
        problems.add(where + ": no page " + m.group(1));
        continue;
      }
      if (m.group(2) != null) {
        Set<String> anchors = ANCHORS.get(page);
        if (anchors == null) {
          anchors = DocPages.anchors(page);
          ANCHORS.put(page, anchors);
        }
        if (!anchors.contains(m.group(2))) {
          problems.add(where + ": " + m.group(1) + " has no heading #" + m.group(2));
        }
      }
    }
    return problems;
  }

  @Test
  void everyPublicType_linksThePageThatExplainsIt() throws IOException {
    List<String> problems = new ArrayList<>();
    int types = 0;
    for (String module : LIBRARIES) {
      Path src = ROOT.resolve(module).resolve("src/main/java");
      List<Path> files;
      try (Stream<Path> all = Files.walk(src)) {
        files = all.filter(p -> p.toString().endsWith(".java"))
            .filter(p -> !p.getFileName().toString().contains("-info"))
            .filter(p -> !NOT_API.contains(src.relativize(p.getParent()).toString()
                .replace('\\', '/')))
            .sorted().toList();
      }
      for (Path file : files) {
        String text = Files.readString(file);
        Matcher type = TYPE.matcher(text);
        if (!type.find()) {
          continue;   // not public
        }
        types++;
        String where = ROOT.relativize(file).toString();
        String comment = null;
        Matcher jd = JAVADOC.matcher(text.substring(0, type.start()));
        while (jd.find()) {
          comment = jd.group(1);
        }
        int[] found = {0};
        if (comment != null) {
          problems.addAll(check(where, comment, found));
        }
        if (found[0] == 0) {
          problems.add(where + ": " + type.group(1) + "'s comment links no docs page");
        }
      }
    }
    assertThat(types).as("public types of the library modules").isGreaterThan(120);
    assertThat(problems).isEmpty();
  }

  @Test
  void everyModulesJavadoc_opensOnAnOverviewThatLinksItsGuides() throws IOException {
    List<String> problems = new ArrayList<>();
    try (Stream<Path> modules = Files.list(ROOT)) {
      for (Path module : modules.filter(p -> Files.isDirectory(p.resolve("src/main/java")))
          .sorted().toList()) {
        String pom = Files.readString(module.resolve("pom.xml"));
        if (pom.contains("<maven.javadoc.skip>true</maven.javadoc.skip>")) {
          continue;
        }
        Path overview = module.resolve("src/main/javadoc/overview.html");
        if (!Files.exists(overview)) {
          problems.add(module.getFileName() + ": no src/main/javadoc/overview.html");
          continue;
        }
        int[] found = {0};
        problems.addAll(check(ROOT.relativize(overview).toString(), Files.readString(overview),
            found));
        if (found[0] == 0) {
          problems.add(ROOT.relativize(overview) + ": links no guide");
        }
      }
    }
    assertThat(Files.readString(ROOT.resolve("pom.xml")))
        .contains("<overview>${project.basedir}/src/main/javadoc/overview.html</overview>");
    assertThat(problems).isEmpty();
  }
}
