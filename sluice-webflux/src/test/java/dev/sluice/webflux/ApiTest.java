package dev.sluice.webflux;

import dev.sluice.testkit.ApiSurface;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** sluice-webflux's public API is the checked-in listing: a change to it is a decision made in review. */
class ApiTest {
  @Test
  void publicApi_isTheCheckedInListing() {
    ApiSurface.check(SluiceWebFilter.class, Path.of("src/test/api/sluice-webflux.txt"), "dev.sluice.internal");
  }
}
