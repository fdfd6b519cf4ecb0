package dev.sluice.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.Isolated;
import picocli.CommandLine;

/**
 * Every command's help: printed without a picocli warning (an unescaped % in a description), and
 * with no tracker issue numbers, which mean nothing to a user.
 */
@Isolated   // it swaps System.err, which every test of the JVM shares
class HelpTest {
  private static void all(CommandLine c, List<CommandLine> out) {
    out.add(c);
    for (CommandLine sub : c.getSubcommands().values()) {
      if (!out.contains(sub)) {
        all(sub, out);
      }
    }
  }

  @Test
  void everyCommandsHelp_printsWithoutWarnings_andWithoutIssueNumbers() {
    List<CommandLine> commands = new ArrayList<>();
    all(Main.commandLine(), commands);
    assertThat(commands).hasSizeGreaterThan(8);
    PrintStream err = System.err;
    ByteArrayOutputStream warnings = new ByteArrayOutputStream();
    System.setErr(new PrintStream(warnings, true, StandardCharsets.UTF_8));
    try {
      for (CommandLine c : commands) {
        String help = c.getUsageMessage(CommandLine.Help.Ansi.OFF);
        assertThat(help).as(c.getCommandName()).doesNotContainPattern("(?i)issue [0-9]+");
      }
    } finally {
      System.setErr(err);
    }
    assertThat(warnings.toString(StandardCharsets.UTF_8)).as("picocli's warnings").isEmpty();
  }

  @Test
  void theTopHelp_namesWhatSluiceDoes() {
    String help = Main.commandLine().getUsageMessage(CommandLine.Help.Ansi.OFF);
    assertThat(help).contains("concurrency limits", "shedding by health", "quotas", "serve",
        "simulate", "plot", "fleet");
  }
}
