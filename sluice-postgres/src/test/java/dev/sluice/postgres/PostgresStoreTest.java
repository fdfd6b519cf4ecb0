package dev.sluice.postgres;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import org.junit.jupiter.api.Test;

class PostgresStoreTest {
  @Test
  void smoke() {
    PostgresStore store = PostgresStore.builder(TestPostgres.dataSource()).createIfMissing(true)
        .prefix("smoke:").timeSourceMicros(() -> 0L).build();
    RateLimiter l = Sluice.builder().limit(Limit.leakyBucket(2, Rate.perHour(2))).store(store).build();
    store.apply("x", new dev.sluice.spi.StoreRequest(dev.sluice.spi.StoreRequest.Operation.TRY_ACQUIRE,
        new int[] {0}, new long[] {1000}, new long[] {0}, new long[] {0}, new long[] {10}));
    assertThat(l.tryAcquire("k").isAllowed()).isTrue();
  }
}
