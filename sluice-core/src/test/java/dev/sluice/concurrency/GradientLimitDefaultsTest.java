package dev.sluice.concurrency;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * GradientLimit's javadoc states the defaults its builder has (issue 44, item 3: it said 1.1,
 * 20 samples and 0.01 where the code had 1.2, 100 and 0.0001).
 */
class GradientLimitDefaultsTest {
  private static String plain(double d) {
    return BigDecimal.valueOf(d).stripTrailingZeros().toPlainString();
  }

  @Test
  void theJavadocSaysTheBuildersDefaults() throws IOException {
    String source = Files.readString(
        Path.of("src/main/java/dev/sluice/concurrency/GradientLimit.java"))
        .replaceAll("\\s*\\n\\s*\\*\\s*", " ").replace("1,000", "1000");
    GradientLimit.Builder b = GradientLimit.builder();
    assertThat(source)
        .contains("The limit to start from (default " + b.initial + ")")
        .contains("The floor (default " + b.min + ")")
        .contains("The ceiling (default " + b.max + ")")
        .contains("(default " + plain(b.tolerance) + ": ")
        .contains("moves by (default " + plain(b.smoothing) + ";")
        .contains("multiplies the limit by (default " + plain(b.backoff) + ";")
        .contains("without backing off (default " + plain(b.dropThreshold) + ";")
        .contains("stays above it (default " + plain(b.drift) + ")")
        .contains("(default " + b.window.toMillis() + " ms and " + b.windowSamples + ";")
        .contains("reached " + Math.round(b.utilization * 100) + "% of it");
  }
}
