package dev.sluice.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Algorithm;
import dev.sluice.Limit;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.env.YamlPropertySourceLoader;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.core.env.PropertySource;
import org.springframework.core.io.ByteArrayResource;

/** The README's and docs/spring.md's five lines of YAML configure what they say they do. */
class ReadmeTest {
  private static String firstYamlBlock(Path file) throws Exception {
    String text = Files.readString(file);
    int start = text.indexOf("```yaml\nsluice:");
    assertThat(start).as("a yaml block in " + file).isGreaterThanOrEqualTo(0);
    int body = start + "```yaml\n".length();
    return text.substring(body, text.indexOf("```", body));
  }

  @Test
  void theStarterInFiveLines() throws Exception {
    Path root = Path.of("..");
    for (Path doc : List.of(root.resolve("README.md"), root.resolve("docs/spring.md"))) {
      String yaml = firstYamlBlock(doc);
      assertThat(yaml.lines().count()).as(doc.toString()).isBetween(5L, 6L);
      String text = Files.readString(doc);
      java.util.regex.Matcher named = java.util.regex.Pattern.compile(
          "@RateLimited\\(policy = \"([^\"]+)\"").matcher(text.substring(0,
              text.indexOf("## ", text.indexOf("```yaml\nsluice:"))));
      List<PropertySource<?>> sources = new YamlPropertySourceLoader()
          .load(doc.toString(), new ByteArrayResource(yaml.getBytes(java.nio.charset.StandardCharsets.UTF_8)));
      new WebApplicationContextRunner()
          .withConfiguration(AutoConfigurations.of(SluiceAutoConfiguration.class))
          .withInitializer(c -> c.getEnvironment().getPropertySources().addFirst(sources.get(0)))
          .withPropertyValues("sluice.store.type=memory")
          .run(context -> {
            SluiceLimiters limiters = context.getBean(SluiceLimiters.class);
            while (named.find()) {
              assertThat(limiters.all()).as("%s: the snippet's policy is in its YAML", doc)
                  .containsKey(named.group(1));
            }
            Limit api = limiters.get("api").limits().get(0);
            assertThat(api.algorithm()).isEqualTo(Algorithm.LEAKY_BUCKET);
            assertThat(api.capacity()).isEqualTo(10);
            assertThat(api.rate().perSecond()).isEqualTo(5);
            assertThat(context).hasSingleBean(FilterRegistrationBean.class);
            assertThat(limiters.settings.rules).singleElement().satisfies(r -> {
              assertThat(r.path()).isEqualTo("/api/**");
              assertThat(r.key().kind()).isEqualTo("ip");
            });
          });
    }
  }
}
