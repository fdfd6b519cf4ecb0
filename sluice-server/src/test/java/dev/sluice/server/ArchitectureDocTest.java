package dev.sluice.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** docs/architecture.md names every part of the service, so a new part gets its line there. */
class ArchitectureDocTest {
  @Test
  void architectureNamesEveryClassOfTheService() throws IOException {
    String doc = Files.readString(Path.of("../docs/architecture.md"));
    List<String> classes;
    try (Stream<Path> files = Files.list(Path.of("src/main/java/dev/sluice/server"))) {
      classes = files.map(f -> f.getFileName().toString())
          .filter(n -> n.endsWith(".java") && !n.equals("package-info.java"))
          .map(n -> n.substring(0, n.length() - ".java".length())).sorted().toList();
    }
    assertThat(classes).contains("SluiceServer", "Policies", "EnvoyConfig", "EnvoyService",
        "Metrics");
    assertThat(classes).allSatisfy(c -> assertThat(doc).as(c).contains("`" + c + "`"));
  }
}
