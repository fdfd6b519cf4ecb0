package dev.sluice.spring;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.springframework.boot.env.YamlPropertySourceLoader;
import org.springframework.core.env.PropertySource;
import org.springframework.core.io.ByteArrayResource;

/** A YAML block of a page in docs/, as the property source a test's context reads first. */
final class DocYaml {
  private DocYaml() {}

  /** The {@code ```yaml} block of {@code docs/<page>} that begins with {@code firstLines}. */
  static PropertySource<?> block(String page, String firstLines) throws IOException {
    String doc = Files.readString(Path.of("../docs", page));
    int at = doc.indexOf("```yaml\n" + firstLines);
    if (at < 0) {
      throw new IllegalStateException("docs/" + page + " has no yaml block starting "
          + firstLines);
    }
    int start = at + "```yaml\n".length();
    String yaml = doc.substring(start, doc.indexOf("```", start));
    return new YamlPropertySourceLoader().load(page, new ByteArrayResource(
        yaml.getBytes(StandardCharsets.UTF_8))).get(0);
  }
}
