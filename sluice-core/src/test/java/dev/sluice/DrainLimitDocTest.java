package dev.sluice;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** docs/semantics.md: a bucket that takes more than 36 years to drain is refused in memory. */
class DrainLimitDocTest {
  private static Limit drainingIn(double years) {
    return Limit.leakyBucket(1, Rate.of(1, Duration.ofSeconds((long) (years * 31_557_600))));
  }

  @Test
  void inMemory_36YearsIsTheLongestDrain_asTheDocsSay() throws Exception {
    assertThat(Files.readString(Path.of("../docs/semantics.md")))
        .contains("(36\nyears in memory, 71 on the shared stores)");
    assertThat(Sluice.builder().limits(drainingIn(36)).build()).isNotNull();
    assertThatThrownBy(() -> Sluice.builder().limits(drainingIn(37)).build())
        .hasMessageContaining("a full bucket takes 37.0 years to drain; the most a store can"
            + " represent is 36 years");
  }
}
