package dev.sluice.spring;

import dev.sluice.testkit.ApiSurface;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** sluice-spring-boot-starter's public API is the checked-in listing: a change to it is a decision made in review. */
class ApiTest {
  @Test
  void publicApi_isTheCheckedInListing() {
    ApiSurface.check(RateLimited.class, Path.of("src/test/api/sluice-spring-boot-starter.txt"), "dev.sluice.internal");
  }
}
