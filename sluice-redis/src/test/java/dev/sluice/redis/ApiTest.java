package dev.sluice.redis;

import dev.sluice.testkit.ApiSurface;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** sluice-redis's public API is the checked-in listing: a change to it is a decision made in review. */
class ApiTest {
  @Test
  void publicApi_isTheCheckedInListing() {
    ApiSurface.check(RedisStore.class, Path.of("src/test/api/sluice-redis.txt"), "dev.sluice.internal");
  }
}
