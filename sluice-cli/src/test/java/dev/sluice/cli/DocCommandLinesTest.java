package dev.sluice.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * Every {@code sluice} command line the README and the docs show (in a code block or in running
 * text) is one the CLI accepts: its command exists and each option and value parses, so that a
 * reader who pastes it gets the command, not a usage error.
 */
class DocCommandLinesTest {
  private static final Pattern COMMAND = Pattern.compile(
      "(?:\\./sluice|java -jar sluice-cli/target/sluice\\.jar)((?: +[^\\s`#|][^\\n`#|]*)?)");

  @Test
  void everyCommandLineInTheDocs_parses() throws IOException {
    List<Path> pages = new ArrayList<>();
    pages.add(Path.of("../README.md"));
    try (Stream<Path> docs = Files.list(Path.of("../docs"))) {
      docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(pages::add);
    }
    List<String> seen = new ArrayList<>();
    List<String> refused = new ArrayList<>();
    for (Path page : pages) {
      Matcher m = COMMAND.matcher(Files.readString(page));
      while (m.find()) {
        String line = m.group(1).strip();
        seen.add(line);
        try {
          Main.commandLine().parseArgs(words(line).toArray(String[]::new));
        } catch (CommandLine.ParameterException e) {
          refused.add(page + ": sluice " + line + "\n    " + e.getMessage());
        }
      }
    }
    assertThat(seen).as("command lines in the docs").hasSizeGreaterThan(40);
    assertThat(refused).as("command lines the CLI refuses").isEmpty();
  }

  /** A shell's words, with single and double quotes. */
  private static List<String> words(String line) {
    List<String> out = new ArrayList<>();
    StringBuilder w = null;
    char quote = 0;
    for (char c : line.toCharArray()) {
      if (quote == 0 && Character.isWhitespace(c)) {
        if (w != null) {
          out.add(w.toString());
          w = null;
        }
      } else {
        if (w == null) {
          w = new StringBuilder();
        }
        if (quote == 0 && (c == '\'' || c == '"')) {
          quote = c;
        } else if (c == quote) {
          quote = 0;
        } else {
          w.append(c);
        }
      }
    }
    if (w != null) {
      out.add(w.toString());
    }
    return out;
  }
}
