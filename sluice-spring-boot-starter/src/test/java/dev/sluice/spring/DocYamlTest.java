package dev.sluice.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.health.HealthSignal;
import dev.sluice.testkit.DocSnippets;
import dev.sluice.testkit.DocSnippets.Snippet;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.env.YamlPropertySourceLoader;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.core.env.PropertySource;
import org.springframework.core.io.ByteArrayResource;

/**
 * Every YAML block the README and the Spring and gRPC pages show for an application is one it can
 * start with: read as Spring Boot reads {@code application.yml}, with every auto-configuration
 * the starter registers, the context starts (a bad property would stop it, naming the property).
 */
class DocYamlTest {
  @Test
  void everyApplicationYamlBlock_startsAnApplication() throws Exception {
    List<Snippet> blocks = new ArrayList<>();
    for (String page : List.of("../README.md", "../docs/spring.md", "../docs/grpc.md")) {
      blocks.addAll(DocSnippets.blocks(Path.of(page), "yaml"));
    }
    assertThat(blocks).as("application YAML blocks").hasSizeGreaterThanOrEqualTo(10);
    Class<?>[] auto = Files.readAllLines(Path.of("src/main/resources/META-INF/spring/"
        + "org.springframework.boot.autoconfigure.AutoConfiguration.imports")).stream()
        .filter(l -> !l.isBlank() && !l.startsWith("#")).map(DocYamlTest::load)
        .toArray(Class<?>[]::new);
    for (Snippet block : blocks) {
      List<PropertySource<?>> sources = new YamlPropertySourceLoader().load(block.where(),
          new ByteArrayResource(block.code().getBytes(StandardCharsets.UTF_8)));
      assertThat(sources).as(block.where()).hasSize(1);
      new WebApplicationContextRunner()
          .withConfiguration(AutoConfigurations.of(auto))
          .withInitializer(c -> c.getEnvironment().getPropertySources().addFirst(sources.get(0)))
          // what a page's block names from the application: the pool signal of the health block
          .withBean("dbPool", HealthSignal.class, () -> HealthSignal.of("db-pool", () -> 0.5))
          .run(context -> assertThat(context).as(block.where()).hasNotFailed());
    }
  }

  private static Class<?> load(String name) {
    try {
      return Class.forName(name.strip());
    } catch (ClassNotFoundException e) {
      throw new AssertionError("the starter registers " + name + ", which is missing", e);
    }
  }
}
