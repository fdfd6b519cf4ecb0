package dev.sluice.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.Isolated;

/**
 * docs/algorithms.md prints what its commands print: each {@code ./sluice simulate} block followed
 * by a table is run (a virtual clock: the same output on every machine) and its output is the
 * table on the page, line for line (the page leaves out the lines above the table, which
 * repeat the traffic and the limits).
 */
@Isolated   // it swaps System.out, which every test of the JVM shares
class AlgorithmsDocTest {
  private static final Pattern BLOCK = Pattern.compile("^```\\w*\\n(.*?)^```",
      Pattern.MULTILINE | Pattern.DOTALL);

  @Test
  void everySimulationOnThePage_printsTheTableThePageShows() throws Exception {
    List<String> blocks = new ArrayList<>();
    Matcher m = BLOCK.matcher(Files.readString(Path.of("../docs/algorithms.md")));
    while (m.find()) {
      blocks.add(m.group(1));
    }
    int checked = 0;
    for (int i = 0; i + 1 < blocks.size(); i++) {
      String command = blocks.get(i).lines().filter(l -> l.startsWith("./sluice simulate"))
          .findFirst().orElse(null);
      if (command == null || !blocks.get(i + 1).startsWith("algorithm ")) {
        continue;
      }
      String[] args = command.replaceFirst("#.*", "").replaceFirst("^\\./sluice ", "").strip()
          .split("\\s+");
      StringWriter out = new StringWriter();
      ByteArrayOutputStream printed = new ByteArrayOutputStream();
      PrintStream was = System.out;
      System.setOut(new PrintStream(printed, true, StandardCharsets.UTF_8));
      int status;
      try {
        status = Main.commandLine().setOut(new PrintWriter(out, true)).execute(args);
      } finally {
        System.setOut(was);
      }
      assertThat(status).as(command).isZero();
      out.write(printed.toString(StandardCharsets.UTF_8));
      String table = out.toString().substring(Math.max(0, out.toString().indexOf("algorithm ")));
      assertThat(strip(table)).as(command).isEqualTo(strip(blocks.get(i + 1)));
      checked++;
    }
    assertThat(checked).as("simulations on the page").isGreaterThanOrEqualTo(4);
  }

  private static String strip(String text) {
    return text.lines().map(String::stripTrailing).reduce((a, b) -> a + "\n" + b).orElse("")
        .strip();
  }
}
