package dev.sluice.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** {@code sluice --version} names the build: the project's version and the commit built. */
class VersionTest {
  @Test
  void version_namesTheProjectsVersion_theCommit_andTheRuntime() throws Exception {
    CommandLine cli = Main.commandLine();
    StringWriter out = new StringWriter();
    cli.setOut(new PrintWriter(out));
    assertThat(cli.execute("--version")).isZero();
    String[] lines = out.toString().split("\n");

    Matcher pom = Pattern.compile("<artifactId>sluice-parent</artifactId>\\s*<version>([^<]+)</version>")
        .matcher(Files.readString(Path.of("pom.xml")));
    assertThat(pom.find()).isTrue();
    assertThat(lines[0]).startsWith("sluice " + pom.group(1) + " (");
    assertThat(lines[1]).startsWith("Java " + System.getProperty("java.version"));

    String head = head(Path.of("../.git"));
    if (head != null) {   // built from a clone: the commit is the clone's
      assertThat(lines[0]).containsPattern("\\(commit [0-9a-f]{7,}")
          .contains("commit " + head.substring(0, 7));
    } else {
      assertThat(lines[0]).contains("(commit unknown)");
    }
  }

  /** The commit HEAD names, read from the git directory as git keeps it; null without one. */
  private static String head(Path git) throws Exception {
    if (!Files.isDirectory(git)) {
      return null;
    }
    String head = Files.readString(git.resolve("HEAD")).strip();
    if (!head.startsWith("ref: ")) {
      return head;   // detached: the commit itself
    }
    String ref = head.substring(5);
    if (Files.exists(git.resolve(ref))) {
      return Files.readString(git.resolve(ref)).strip();
    }
    for (String line : Files.readAllLines(git.resolve("packed-refs"))) {
      if (line.endsWith(" " + ref)) {
        return line.substring(0, line.indexOf(' '));
      }
    }
    throw new AssertionError("HEAD names " + ref + ", which the git directory lacks");
  }
}
