package dev.sluice;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/** The pages a user reads (the README and docs/*.md) and their headings' anchors, for the doc tests. */
final class DocPages {
  static final Path ROOT = Path.of("..");
  private static final Pattern HEADING = Pattern.compile("^#+\\s+(.*)$", Pattern.MULTILINE);

  private DocPages() {}

  /** The README, then every page of docs/, in name order. */
  static List<Path> pages() throws IOException {
    List<Path> pages = new ArrayList<>();
    pages.add(ROOT.resolve("README.md").normalize());
    try (Stream<Path> docs = Files.list(ROOT.resolve("docs"))) {
      docs.filter(p -> p.toString().endsWith(".md")).map(Path::normalize).sorted()
          .forEach(pages::add);
    }
    return pages;
  }

  /** A heading's anchor, as GitHub makes it. */
  static String slug(String heading) {
    return heading.trim().toLowerCase(Locale.ROOT).replace("`", "")
        .replaceAll("[^\\p{L}\\p{N}_\\- ]", "").replace(' ', '-');
  }

  /** The anchors of {@code page}'s headings. */
  static Set<String> anchors(Path page) throws IOException {
    Set<String> set = new HashSet<>();
    Matcher h = HEADING.matcher(Files.readString(page));
    while (h.find()) {
      set.add(slug(h.group(1)));
    }
    return set;
  }
}
