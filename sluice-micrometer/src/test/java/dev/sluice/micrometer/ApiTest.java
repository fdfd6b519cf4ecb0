package dev.sluice.micrometer;

import dev.sluice.testkit.ApiSurface;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** sluice-micrometer's public API is the checked-in listing: a change to it is a decision made in review. */
class ApiTest {
  @Test
  void publicApi_isTheCheckedInListing() {
    ApiSurface.check(SluiceMetrics.class, Path.of("src/test/api/sluice-micrometer.txt"), "dev.sluice.internal");
  }
}
