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
import org.junit.jupiter.api.Test;

/**
 * The README's and the docs' links between themselves lead somewhere: every linked file exists,
 * and every anchor is a heading of the page it names (as GitHub makes anchors of headings).
 */
class DocLinksTest {
  private static final Path ROOT = Path.of("..");
  private static final Pattern LINK = Pattern.compile("\\]\\(([^)\\s]+)\\)");

  @Test
  void everyLinkBetweenTheDocs_leadsSomewhere() throws IOException {
    List<Path> pages = DocPages.pages();
    Map<Path, Set<String>> anchors = new HashMap<>();
    for (Path p : pages) {
      anchors.put(p, DocPages.anchors(p));
    }
    List<String> broken = new ArrayList<>();
    int checked = 0;
    for (Path page : pages) {
      Matcher m = LINK.matcher(Files.readString(page));
      while (m.find()) {
        String link = m.group(1);
        if (link.startsWith("http://") || link.startsWith("https://")
            || link.startsWith("mailto:")) {
          continue;
        }
        checked++;
        int hash = link.indexOf('#');
        String file = hash < 0 ? link : link.substring(0, hash);
        Path target = file.isEmpty() ? page : page.getParent().resolve(file).normalize();
        if (!Files.exists(target)) {
          broken.add(page + ": " + link + " (no such file)");
        } else if (hash >= 0 && target.toString().endsWith(".md")
            && !anchors.getOrDefault(target, Set.of()).contains(link.substring(hash + 1))) {
          broken.add(page + ": " + link + " (no such heading)");
        }
      }
    }
    assertThat(checked).as("links checked").isGreaterThan(50);
    assertThat(broken).isEmpty();
  }
}
