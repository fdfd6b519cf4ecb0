package dev.sluice;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The BOM names every module the build publishes, at the build's version, so that a user who
 * imports it can name any module without a version (examples/spring-boot-sample does).
 */
class BomTest {
  private static final Path ROOT = Path.of("..");

  @Test
  void bomListsEveryPublishedModule_atTheBuildsVersion() throws IOException {
    String parent = Files.readString(ROOT.resolve("pom.xml"));
    String bom = Files.readString(ROOT.resolve("sluice-bom/pom.xml"));
    List<String> published = new ArrayList<>();
    for (String module : all(parent, "<module>([^<]+)</module>")) {
      // not published: the BOM itself, the benchmarks, core's checks (tests only), the examples
      if (!module.equals("sluice-bom") && !module.equals("sluice-benchmarks")
          && !module.equals("sluice-core-checks") && !module.startsWith("examples/")) {
        published.add(module);
      }
    }
    assertThat(published).hasSizeGreaterThanOrEqualTo(10);
    assertThat(all(bom, "<artifactId>(sluice-[^<]+)</artifactId>"))
        .containsExactlyInAnyOrderElementsOf(concat("sluice-bom", published));
    assertThat(first(bom, "<version>([^<$]+)</version>"))
        .isEqualTo(first(parent, "<version>([^<$]+)</version>"));
  }

  @Test
  void everyBuildIsReproducible_withOneTimestamp() throws IOException {
    String parent = Files.readString(ROOT.resolve("pom.xml"));
    String bom = Files.readString(ROOT.resolve("sluice-bom/pom.xml"));
    String stamp = "<project.build.outputTimestamp>([^<]+)</project.build.outputTimestamp>";
    assertThat(first(parent, stamp)).isNotNull().isEqualTo(first(bom, stamp));
  }

  /**
   * Every library module has a module descriptor; the starter's and the testkit's are compiled
   * after their tests (src/main/module), which run on the class path. The server and the CLI are
   * applications.
   */
  @Test
  void everyLibraryModuleDeclaresItsModule() throws IOException {
    for (String module : List.of("sluice-core", "sluice-testkit", "sluice-redis", "sluice-postgres",
        "sluice-jdbc", "sluice-mysql",
        "sluice-servlet", "sluice-micrometer", "sluice-console", "sluice-grpc", "sluice-webflux",
        "sluice-spring-boot-starter")) {
      Path java = ROOT.resolve(module).resolve("src/main/java/module-info.java");
      Path late = ROOT.resolve(module).resolve("src/main/module/module-info.java");
      assertThat(Files.exists(java) || Files.exists(late)).as(module).isTrue();
      String descriptor = Files.readString(Files.exists(java) ? java : late);
      assertThat(descriptor).as(module).contains("module dev.sluice").contains("exports dev.sluice");
    }
  }

  private static List<String> concat(String head, List<String> tail) {
    List<String> all = new ArrayList<>(tail);
    all.add(0, head);
    return all;
  }

  private static List<String> all(String text, String regex) {
    List<String> found = new ArrayList<>();
    Matcher m = Pattern.compile(regex).matcher(text);
    while (m.find()) {
      found.add(m.group(1).trim());
    }
    return found;
  }

  private static String first(String text, String regex) {
    Matcher m = Pattern.compile(regex).matcher(text);
    return m.find() ? m.group(1) : null;
  }
}
