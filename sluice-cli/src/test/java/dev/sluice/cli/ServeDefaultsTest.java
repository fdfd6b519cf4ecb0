package dev.sluice.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.server.Options;
import java.io.IOException;
import java.lang.reflect.Field;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.Option;

/**
 * The service's defaults are written once, in {@link Options#defaults()}: {@code sluice serve}
 * takes them from there, and docs/server.md's option table says the same.
 */
class ServeDefaultsTest {
  @Test
  void serveWritesNoDefaultOfItsOwn() {
    for (Field f : ServeCommand.class.getDeclaredFields()) {
      Option o = f.getAnnotation(Option.class);
      if (o != null) {
        assertThat(o.defaultValue()).as(f.getName()).isEqualTo("__no_default_value__");   // picocli: none given
      }
    }
  }

  @Test
  void everyDefaultOfOptions_isTheDefaultOfAServeOption() {
    CommandLine serve = new CommandLine(new ServeCommand());
    Map<String, String> options = new LinkedHashMap<>();
    for (OptionSpec o : serve.getCommandSpec().options()) {
      options.put(o.longestName().substring(2), o.defaultValueString());
    }
    Map<String, String> defaults = Options.defaults();
    assertThat(defaults).hasSizeGreaterThanOrEqualTo(26);
    defaults.forEach((name, value) ->
        assertThat(options).as("--" + name).containsEntry(name, value));
    assertThat(serve.getUsageMessage()).contains("(default: 500ms)", "(default: 8080; 0: any free)");
  }

  @Test
  void theDocsTableStatesTheSameDefaults() throws IOException {
    String doc = Files.readString(Path.of("../docs/server.md"));
    Matcher row = Pattern.compile("(?m)^\\| `--([a-z-]+)[^`]*` \\| ([^|]+) \\|").matcher(doc);
    Map<String, String> documented = new LinkedHashMap<>();
    while (row.find()) {
      String cell = row.group(2).trim();
      int otherwise = cell.lastIndexOf("else ");
      documented.put(row.group(1),
          (otherwise >= 0 ? cell.substring(otherwise + 5) : cell).replace("`", "").trim());
    }
    Map<String, String> defaults = new LinkedHashMap<>(Options.defaults());
    defaults.keySet().removeIf(k -> k.startsWith("envoy-"));   // docs/envoy.md has those
    defaults.forEach((name, value) ->
        assertThat(documented).as("docs/server.md, --" + name).containsEntry(name, value));
  }
}
