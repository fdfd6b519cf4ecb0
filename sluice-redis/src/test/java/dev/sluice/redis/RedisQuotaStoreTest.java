package dev.sluice.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.quota.Quota;
import dev.sluice.quota.QuotaChange;
import dev.sluice.quota.QuotaStore;
import dev.sluice.quota.Quotas;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Quotas in a real Redis: a change made through one instance's store is seen by another
 * instance's {@link Quotas} within its refresh (the time measured), every change is in the audit
 * trail dated by Redis, and the bound is kept by the script.
 */
class RedisQuotaStoreTest {
  private final String prefix = "test:" + UUID.randomUUID() + ":{quotas}";
  private final RedisClient client = RedisClient.create(TestRedis.uri());
  private final StatefulRedisConnection<String, String> one = client.connect();
  private final StatefulRedisConnection<String, String> two = client.connect();

  @AfterEach
  void close() {
    one.close();
    two.close();
    client.shutdown();
  }

  private static List<Limit> perSecond(int n) {
    return List.of(Limit.leakyBucket(n, Rate.perSecond(n)).named("plan; \"quoted\"\ttab"),
        Limit.fixedWindow(n * 60, Duration.ofMinutes(1)).withPenalty(Duration.ofSeconds(5)));
  }

  @Test
  void aChangeOnOneInstance_isSeenByAnotherWithinItsRefresh() throws Exception {
    QuotaStore admin = RedisQuotaStore.create(one, prefix, 100, 100);
    QuotaStore reader = RedisQuotaStore.create(two, prefix, 100, 100);
    try (Quotas quotas = Quotas.of(reader).refreshEvery(Duration.ofMillis(100))) {
      assertThat(quotas.find("api", "customer:acme")).isNull();
      Quota q = Quota.rate("api", "customer:acme", perSecond(500))
          .until(Instant.parse("2030-01-01T00:00:00Z")).because("launch\nweek, 50% off");
      long start = System.nanoTime();
      admin.put(q, "ops@example.com");
      while (quotas.find("api", "customer:acme") == null
          && System.nanoTime() - start < 5_000_000_000L) {
        Thread.sleep(5);
      }
      long seenMs = (System.nanoTime() - start) / 1_000_000;
      assertThat(quotas.find("api", "customer:acme")).as("seen by the other instance")
          .isEqualTo(q);
      assertThat(seenMs).as("ms from the change to the other instance's lookup").isLessThan(1000);
      admin.remove("api", "customer:acme", false, "ops@example.com", "done");
      start = System.nanoTime();
      while (quotas.find("api", "customer:acme") != null
          && System.nanoTime() - start < 5_000_000_000L) {
        Thread.sleep(5);
      }
      assertThat(quotas.find("api", "customer:acme")).isNull();
    }
  }

  @Test
  void everyChange_isAudited_datedByRedis_andTheBoundIsKept() {
    QuotaStore store = RedisQuotaStore.create(one, prefix, 2, 3);
    Quota a = Quota.concurrency("exports", "tenant:", 2).forPrefix().because("misbehaving");
    Quota b = Quota.concurrency("exports", "tenant:", 4).forPrefix().because("better");
    Instant before = Instant.now().minusSeconds(5);
    assertThat(store.put(a, "alice")).isEqualTo(1);
    assertThat(store.put(b, "bob\tsmith")).isEqualTo(2);
    assertThat(store.remove("exports", "tenant:", false, "carol", "not a prefix")).as("no such")
        .isEqualTo(2);
    assertThat(store.remove("exports", "tenant:", true, "carol", "over")).isEqualTo(3);
    List<QuotaChange> audit = store.audit(10);
    assertThat(audit).extracting(QuotaChange::version).containsExactly(3L, 2L, 1L);
    assertThat(audit.get(0).before()).isEqualTo(b);
    assertThat(audit.get(0).after()).isNull();
    assertThat(audit.get(0).reason()).isEqualTo("over");
    assertThat(audit.get(1).who()).isEqualTo("bob\tsmith");
    assertThat(audit.get(1).before()).isEqualTo(a);
    assertThat(audit.get(1).after()).isEqualTo(b);
    assertThat(audit.get(2).at()).isAfter(before).isBefore(Instant.now().plusSeconds(5));
    store.put(Quota.concurrency("db", "k1", 1), "x");
    store.put(Quota.concurrency("db", "k2", 1), "x");
    assertThatThrownBy(() -> store.put(Quota.concurrency("db", "k3", 1), "x"))
        .hasMessage("the store holds its most quotas (2): remove one first");
    assertThat(store.audit(10)).as("the newest 3 kept").hasSize(3);
    assertThat(store.read().quotas()).hasSize(2);
    assertThat(store.read().version()).isEqualTo(5);
  }
}
