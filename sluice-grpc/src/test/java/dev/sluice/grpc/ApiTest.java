package dev.sluice.grpc;

import dev.sluice.testkit.ApiSurface;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** sluice-grpc's public API is the checked-in listing: a change to it is a decision made in review. */
class ApiTest {
  @Test
  void publicApi_isTheCheckedInListing() {
    ApiSurface.check(SluiceServerInterceptor.class, Path.of("src/test/api/sluice-grpc.txt"), "dev.sluice.internal");
  }
}
