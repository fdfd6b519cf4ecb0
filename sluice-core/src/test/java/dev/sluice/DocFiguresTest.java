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
 * Every figure in the docs says how it was produced: a section of a page whose tables hold
 * measured numbers names the command (or the test) that produced them. docs/benchmarks.md goes
 * further: each of its tables is dated, its commands name benchmarks that exist, and its history
 * (docs/results/history.csv) is data with a date and a command on every row.
 */
class DocFiguresTest {
  private static final Path ROOT = Path.of("..");
  private static final Pattern HEADING = Pattern.compile("^(#+ .*)$", Pattern.MULTILINE);
  /** A table cell that is a measured number: "1,234", "17.39 ± 0.59", "2.03×", "95.3%", "357 µs". */
  private static final Pattern FIGURE = Pattern.compile(
      "\\**~?[\\d,.]+( ± [\\d.]+)?\\s*(×|%|µs|ms|s|B|/s|KB|MB|MiB)?\\**");
  /** What produces a figure: a command line, or a test that asserts it. */
  private static final Pattern PRODUCER = Pattern.compile(
      "(`|^\\s*)(java |\\./sluice |sluice |sluice-benchmarks/|mvn |curl |wrk |h2load )"
          + "|\\w+Test\\b|`\\w+_\\w+`", Pattern.MULTILINE);

  private record Section(Path page, String heading, String body) {
    List<String> tableCells() {
      List<String> cells = new ArrayList<>();
      for (String line : body.split("\n")) {
        if (line.startsWith("|")) {
          for (String c : line.strip().replaceAll("^\\||\\|$", "").split("\\|")) {
            cells.add(c.strip());
          }
        }
      }
      return cells;
    }

    boolean hasFigures() {
      return tableCells().stream()
          .anyMatch(c -> FIGURE.matcher(c).matches() && c.chars().anyMatch(Character::isDigit));
    }

    @Override
    public String toString() {
      return ROOT.relativize(page) + " " + heading;
    }
  }

  private static List<Section> sections(Path page) throws IOException {
    String text = Files.readString(page);
    List<Section> out = new ArrayList<>();
    Matcher h = HEADING.matcher(text);
    String heading = "(top)";
    int from = 0;
    while (h.find()) {
      out.add(new Section(page, heading, text.substring(from, h.start())));
      heading = h.group(1);
      from = h.end();
    }
    out.add(new Section(page, heading, text.substring(from)));
    return out;
  }

  @Test
  void everyTableOfFigures_namesWhatProducedIt() throws IOException {
    List<Section> withFigures = new ArrayList<>();
    List<String> without = new ArrayList<>();
    for (Path page : DocPages.pages()) {
      for (Section s : sections(page)) {
        if (s.hasFigures()) {
          withFigures.add(s);
          if (!PRODUCER.matcher(s.body()).find()) {
            without.add(s.toString());
          }
        }
      }
    }
    assertThat(withFigures).as("sections with tables of figures").hasSizeGreaterThan(40);
    assertThat(without).as("sections whose figures name no command or test").isEmpty();
  }

  @Test
  void benchmarks_everyTableIsDatedAndCarriesItsCommand() throws IOException {
    Path page = ROOT.resolve("docs/benchmarks.md");
    Path sources = ROOT.resolve("sluice-benchmarks/src/main/java/dev/sluice/benchmarks");
    List<String> problems = new ArrayList<>();
    int tables = 0;
    for (Section s : sections(page)) {
      if (s.tableCells().isEmpty() || s.heading().equals("## How to read these tables")) {
        continue;
      }
      tables++;
      if (!s.body().matches("(?s).*Measured 20\\d\\d-\\d\\d-\\d\\d.*")) {
        problems.add(s + ": no 'Measured <date>'");
      }
      Matcher block = Pattern.compile("```sh\n(.*?)```", Pattern.DOTALL).matcher(s.body());
      if (!block.find()) {
        problems.add(s + ": no command block");
        continue;
      }
      // java -jar ...benchmarks.jar 'RegexOfBenchmarks...' or java -cp ...benchmarks.jar dev.sluice.benchmarks.Main
      Matcher named = Pattern.compile("benchmarks\\.jar\\s+'?(?:dev\\.sluice\\.benchmarks\\.)?([A-Za-z]+)")
          .matcher(block.group(1));
      int commands = 0;
      while (named.find()) {
        commands++;
        if (!Files.exists(sources.resolve(named.group(1) + ".java"))) {
          problems.add(s + ": names " + named.group(1) + ", which sluice-benchmarks lacks");
        }
      }
      Matcher script = Pattern.compile("(sluice-benchmarks/\\S+\\.sh)").matcher(block.group(1));
      while (script.find()) {
        if (!Files.exists(ROOT.resolve(script.group(1)))) {
          problems.add(s + ": names " + script.group(1) + ", which does not exist");
        }
        commands++;
      }
      if (commands == 0) {
        problems.add(s + ": its command block runs no benchmark");
      }
    }
    assertThat(tables).as("benchmark tables").isGreaterThan(20);
    assertThat(problems).isEmpty();
  }

  @Test
  void theBenchmarkHistory_isDataWithADateAndACommandOnEveryRow() throws IOException {
    List<String> rows = Files.readAllLines(ROOT.resolve("docs/results/history.csv"));
    assertThat(rows.get(0)).isEqualTo("date,build,section,table,row,column,value,command");
    assertThat(rows).hasSizeGreaterThan(1000);
    Pattern csv = Pattern.compile("(?:\"(?:[^\"]|\"\")*\"|[^,]*)");
    List<String> bad = new ArrayList<>();
    for (String row : rows.subList(1, rows.size())) {
      List<String> fields = new ArrayList<>();
      Matcher m = csv.matcher(row);
      int at = 0;
      while (at <= row.length() && m.find(at)) {
        fields.add(m.group());
        at = m.end() + 1;
      }
      if (fields.size() != 8 || !fields.get(0).matches("20\\d\\d-\\d\\d-\\d\\d")
          || fields.get(7).isBlank() || fields.get(6).isBlank()) {
        bad.add(row);
      }
    }
    assertThat(bad).as("rows without 8 fields, a date, a value and a command").isEmpty();
  }
}
