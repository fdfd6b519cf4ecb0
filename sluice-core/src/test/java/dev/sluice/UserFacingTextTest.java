package dev.sluice;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * What a user reads (the README, the docs, and every module's main sources and resources: javadoc,
 * messages, help texts, scripts) never cites the project's issue tracker by number: "issue 28"
 * means nothing to a user. A link to another project's issue is an address, not a citation.
 */
class UserFacingTextTest {
  private static final Path ROOT = Path.of("..");
  private static final Pattern ISSUE =
      Pattern.compile("(?<![/\\w])issues?\\s+#?\\d+", Pattern.CASE_INSENSITIVE);
  private static final Set<String> TEXT = Set.of(".java", ".lua", ".sql", ".html", ".js", ".css",
      ".properties", ".yaml", ".yml", ".json", ".md", ".txt");

  @Test
  void noUserFacingText_citesAnIssueNumber() throws IOException {
    List<Path> files = new ArrayList<>(DocPages.pages());
    try (Stream<Path> modules = Files.list(ROOT)) {
      for (Path module : modules.filter(p -> Files.isDirectory(p.resolve("src/main"))).toList()) {
        try (Stream<Path> all = Files.walk(module.resolve("src/main"))) {
          all.filter(Files::isRegularFile).filter(UserFacingTextTest::isText).forEach(files::add);
        }
      }
    }
    assertThat(files).as("the README, the docs and the main sources").hasSizeGreaterThan(300);
    List<String> found = new ArrayList<>();
    for (Path f : files) {
      String[] lines = Files.readString(f).split("\n", -1);
      for (int i = 0; i < lines.length; i++) {
        Matcher m = ISSUE.matcher(lines[i]);
        if (m.find()) {
          found.add(ROOT.relativize(f) + ":" + (i + 1) + ": " + m.group());
        }
      }
    }
    assertThat(found).as("issue numbers in user-facing text").isEmpty();
  }

  private static boolean isText(Path p) {
    String name = p.getFileName().toString();
    int dot = name.lastIndexOf('.');
    return dot > 0 && TEXT.contains(name.substring(dot));
  }
}
