package dev.sluice.cli;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;

/**
 * The output options of the commands that print a report ({@code simulate}, {@code simulate
 * fairness}, {@code fleet}): the format, the file, and the optional plot beside it.
 */
final class OutputOptions {
  @Option(names = "--format", defaultValue = "table", paramLabel = "table|csv|json",
      description = "Output format (default table; the command's description says what csv holds).")
  String format;

  @Option(names = {"-o", "--output"}, paramLabel = "FILE",
      description = "Write to a file instead of standard output.")
  Path output;

  /**
   * The format, checked.
   *
   * @throws InputException naming the format if it is not table, csv or json
   */
  String format() throws InputException {
    if (!List.of("table", "csv", "json").contains(format)) {
      throw new InputException("--format must be table, csv or json but was '" + format + "'");
    }
    return format;
  }

  /** Writes the report to the file, or to the command's standard output. */
  void write(CommandSpec spec, String text) throws IOException {
    Output.text(output, spec.commandLine().getOut(), text);
  }

  /** A plot of the run, drawn when asked for. */
  static final class PlotOptions {
    @Option(names = "--plot", paramLabel = "FILE", description = "Also draw the run: FILE.svg or FILE.png.")
    Path plot;

    @Option(names = "--width", defaultValue = "1100", description = "Plot width in pixels (default 1100).")
    int width;

    /** Checks the file name (.svg or .png) and the width. */
    void check() {
      Output.checkPlot(plot, width);
    }
  }
}
