package dev.sluice.testkit;

import dev.sluice.Sluice;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * The public APIs of sluice-core (less dev.sluice.internal, exported only to Sluice's own
 * modules) and of the testkit are the checked-in listings: a change to either is a decision made
 * in review.
 */
class ApiTest {
  @Test
  void coreApi_isTheCheckedInListing() {
    ApiSurface.check(Sluice.class, Path.of("src/test/api/sluice-core.txt"), "dev.sluice.internal");
  }

  @Test
  void testkitApi_isTheCheckedInListing() {
    ApiSurface.check(ApiSurface.class, Path.of("src/test/api/sluice-testkit.txt"));
  }
}
