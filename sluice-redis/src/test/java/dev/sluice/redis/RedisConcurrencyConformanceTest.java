package dev.sluice.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.spi.PermitGroup;
import dev.sluice.testkit.ConcurrencyConformanceSuite;
import dev.sluice.testkit.PermitStoreFactory;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.cluster.SlotHash;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** Permits on Redis pass the whole concurrency conformance suite against a real Redis. */
class RedisConcurrencyConformanceTest extends ConcurrencyConformanceSuite {
  @Override
  protected PermitStoreFactory factory() {
    return clock -> RedisFactory.store("test:" + UUID.randomUUID() + ":", clock);
  }

  /**
   * A group's set and its keys' sets share the group's hash slot (one script call touches both,
   * on a cluster too), both expire once their last lease has ended (an idle group costs
   * nothing), and the members of one key never meet another's in the group's set.
   */
  @Test
  void groupedPermits_shareTheGroupsSlot_andExpireWithTheirLastLease() {
    RedisStore store = RedisFactory.store("test:" + UUID.randomUUID() + ":", clock);
    PermitGroup terms = new PermitGroup("tenant", 10, 10, 0);
    assertThat(store.acquire(terms, "a", "p1", 2, 10, 5_000).done()).isTrue();
    assertThat(store.acquire(terms, "b", "p1", 1, 10, 5_000).done()).isTrue();   // same id, b
    RedisCommands<String, String> redis = TestRedis.connection().sync();
    String group = store.groupPermitsKey("tenant");
    String a = store.groupMemberPermitsKey("tenant", "a");
    assertThat(SlotHash.getSlot(a)).isEqualTo(SlotHash.getSlot(group));
    assertThat(SlotHash.getSlot(store.groupMemberPermitsKey("tenant", "other")))
        .isEqualTo(SlotHash.getSlot(group));
    assertThat(redis.zcard(group)).isEqualTo(3);
    assertThat(redis.zcard(a)).isEqualTo(2);
    assertThat(store.inFlight("tenant", null)).isEqualTo(3);
    assertThat(store.inFlight("tenant", "b")).isEqualTo(1);
    // the lease is 5 s; a test clock adds 60 s of padding to expiries (the store's test hook)
    assertThat(redis.pttl(group)).isBetween(1L, 65_000L);
    assertThat(redis.pttl(a)).isBetween(1L, 65_000L);
    assertThat(store.release("tenant", "b", "p1", 1).done()).isTrue();
    assertThat(store.inFlight("tenant", null)).isEqualTo(2);
    assertThat(store.inFlight("tenant", "a")).isEqualTo(2);   // a's p1 was not b's
  }
}
