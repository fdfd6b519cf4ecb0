package dev.sluice.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.testkit.DocSnippets;
import dev.sluice.testkit.DocSnippets.Snippet;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every Java block of the README and the docs compiles as a reader pastes it, imports included;
 * and every block that needs no server of its own (no Redis, database or network address in it)
 * runs without an exception. The starter's test class path holds every module a page shows.
 */
class DocSnippetsTest {
  /** A block that reaches a server: compiled, not run. */
  private static final Pattern NEEDS_A_SERVER = Pattern.compile(
      "redis://|jdbc:|dataSource|DataSource|localhost:|https?://|ServerBuilder|\\.start\\(\\)"
          + "|servletContext|@SpringBootApplication|SluiceServer");

  @TempDir
  Path classes;

  @Test
  void everyJavaBlock_compiles_andThoseNeedingNoServer_run() throws Exception {
    List<Snippet> snippets = new ArrayList<>();
    for (Path page : DocSnippets.pages(Path.of(".."))) {
      snippets.addAll(DocSnippets.blocks(page, "java"));
    }
    assertThat(snippets).as("Java blocks in the README and docs").hasSizeGreaterThan(30);
    DocSnippets.Compiled compiled = DocSnippets.compile(snippets, classes);
    int ran = 0;
    for (Snippet s : snippets) {
      boolean server = NEEDS_A_SERVER.matcher(s.code() + s.given()).find();
      if (!server && compiled.run(s, 30)) {
        ran++;
      } else {
        System.out.println("compiled, not run: " + s.where()
            + (server ? " (reaches a server)" : " (declarations only)"));
      }
    }
    System.out.printf("doc snippets: %d Java blocks compiled, %d run%n", snippets.size(), ran);
    assertThat(ran).as("blocks run").isGreaterThanOrEqualTo(17);
  }
}
