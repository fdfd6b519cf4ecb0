package dev.sluice.server;

import dev.sluice.testkit.ApiSurface;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** sluice-server's public API is the checked-in listing: a change to it is a decision made in review. */
class ApiTest {
  @Test
  void publicApi_isTheCheckedInListing() {
    ApiSurface.check(SluiceServer.class, Path.of("src/test/api/sluice-server.txt"), "dev.sluice.internal");
  }
}
