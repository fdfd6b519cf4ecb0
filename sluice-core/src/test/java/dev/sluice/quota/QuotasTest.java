package dev.sluice.quota;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * Quotas as data, in memory: a key's quota replaces its policy's limits (exact key first, then the
 * longest prefix), expires, is audited, and is kept as last known while the store fails.
 */
class QuotasTest {
  private final AtomicReference<Instant> now =
      new AtomicReference<>(Instant.parse("2026-11-29T12:00:00Z"));
  private final InMemoryQuotaStore store = InMemoryQuotaStore.create(3, 4, now::get);

  private static List<Limit> perHour(int n) {
    return List.of(Limit.leakyBucket(n, Rate.perHour(n)));
  }

  private static int admitted(RateLimiter l, String key, int tries) {
    int n = 0;
    for (int i = 0; i < tries; i++) {
      n += l.tryAcquire(key).isAllowed() ? 1 : 0;
    }
    return n;
  }

  @Test
  void aKeysQuota_replacesItsPolicysLimits_untilRemoved() {
    Quotas quotas = Quotas.of(store, now::get);
    RateLimiter api = quotas.rateLimiter("api",
        Sluice.builder().limits(perHour(2).toArray(Limit[]::new)).build(),
        limits -> Sluice.builder().limits(limits.toArray(Limit[]::new)).build());
    store.put(Quota.rate("api", "acme", perHour(5)).because("pro plan"), "ops@example.com");
    assertThat(quotas.refresh()).isTrue();
    assertThat(admitted(api, "acme", 10)).as("acme's quota").isEqualTo(5);
    assertThat(admitted(api, "other", 10)).as("the policy's limits").isEqualTo(2);
    assertThat(api.limits()).isEqualTo(perHour(2));
    store.remove("api", "acme", false, "ops@example.com", "plan ended");
    assertThat(quotas.refresh()).isTrue();
    assertThat(admitted(api, "acme", 10)).as("back to the policy's bucket").isEqualTo(2);
    api.close();
  }

  @Test
  void theExactKeyFirst_thenTheLongestPrefix_andExpiredOnesAreSkipped() {
    store.put(Quota.rate("api", "tenant:", perHour(10)).forPrefix(), "a");
    store.put(Quota.rate("api", "tenant:acme/", perHour(20)).forPrefix()
        .until(Instant.parse("2026-11-29T13:00:00Z")), "a");
    store.put(Quota.rate("api", "tenant:acme/live", perHour(30)), "a");
    Quotas quotas = Quotas.of(store, now::get);
    assertThat(quotas.find("api", "tenant:acme/live").limits()).isEqualTo(perHour(30));
    assertThat(quotas.find("api", "tenant:acme/batch").limits()).isEqualTo(perHour(20));
    assertThat(quotas.find("api", "tenant:other").limits()).isEqualTo(perHour(10));
    assertThat(quotas.find("api", "user:1")).isNull();
    assertThat(quotas.find("other", "tenant:acme/live")).isNull();
    now.set(Instant.parse("2026-11-29T13:00:00Z"));   // acme's prefix quota expires
    assertThat(quotas.find("api", "tenant:acme/batch").limits()).as("a shorter prefix")
        .isEqualTo(perHour(10));
    assertThat(quotas.all()).hasSize(3);
  }

  @Test
  void everyChange_isAudited_newestFirst_andTheStoreIsBounded() {
    Quota pro = Quota.rate("api", "acme", perHour(5)).because("pro plan");
    Quota more = Quota.rate("api", "acme", perHour(9)).because("launch week");
    assertThat(store.put(pro, "alice")).isEqualTo(1);
    now.set(now.get().plusSeconds(60));
    assertThat(store.put(more, "bob")).isEqualTo(2);
    assertThat(store.remove("api", "nobody", false, "bob", "no such quota")).isEqualTo(2);
    assertThat(store.remove("api", "acme", false, "carol", "plan ended")).isEqualTo(3);
    List<QuotaChange> audit = store.audit(10);
    assertThat(audit).extracting(QuotaChange::version).containsExactly(3L, 2L, 1L);
    assertThat(audit.get(0)).isEqualTo(new QuotaChange(3, now.get(), "carol", more, null,
        "plan ended"));
    assertThat(audit.get(1)).isEqualTo(new QuotaChange(2, now.get(), "bob", pro, more,
        "launch week"));
    assertThat(audit.get(2).before()).isNull();
    assertThat(audit.get(2).at()).isEqualTo(Instant.parse("2026-11-29T12:00:00Z"));
    for (int i = 0; i < 3; i++) {
      store.put(Quota.concurrency("db", "k" + i, 1), "x");
    }
    assertThatThrownBy(() -> store.put(Quota.concurrency("db", "k3", 1), "x"))
        .hasMessage("the store holds its most quotas (3): remove one first");
    assertThat(store.put(Quota.concurrency("db", "k0", 2), "x")).as("a replacement fits")
        .isEqualTo(7);
    assertThat(store.audit(10)).as("the newest 4 kept").hasSize(4);
  }

  @Test
  void aStoreThatCannotBeRead_leavesTheLastQuotasReadInPlace() {
    AtomicBoolean down = new AtomicBoolean();
    QuotaStore flaky = new QuotaStore() {
      @Override
      public long version() {
        if (down.get()) {
          throw new IllegalStateException("store down");
        }
        return store.version();
      }

      @Override
      public Snapshot read() {
        return store.read();
      }

      @Override
      public long put(Quota quota, String who) {
        return store.put(quota, who);
      }

      @Override
      public long remove(String policy, String key, boolean prefix, String who, String reason) {
        return store.remove(policy, key, prefix, who, reason);
      }

      @Override
      public List<QuotaChange> audit(int n) {
        return store.audit(n);
      }
    };
    store.put(Quota.concurrency("db", "orders", 2), "ops");
    Quotas quotas = Quotas.of(flaky, now::get);
    assertThat(quotas.concurrencyLimit("db", "orders", 10)).isEqualTo(2);
    assertThat(quotas.concurrencyLimit("db", "other", 10)).isEqualTo(10);
    down.set(true);
    store.put(Quota.concurrency("db", "orders", 3), "ops");
    assertThat(quotas.refresh()).isFalse();
    assertThat(quotas.lastFailure()).hasMessage("store down");
    assertThat(quotas.concurrencyLimit("db", "orders", 10)).as("last known").isEqualTo(2);
    down.set(false);
    assertThat(quotas.refresh()).isTrue();
    assertThat(quotas.lastFailure()).isNull();
    assertThat(quotas.concurrencyLimit("db", "orders", 10)).isEqualTo(3);
    assertThat(quotas.refresh()).as("the version did not move").isFalse();
    assertThat(quotas.version()).isEqualTo(2);
  }

  @Test
  void badQuotas_areNamed() {
    assertThatThrownBy(() -> Quota.rate("no spaces", "k", perHour(1)))
        .hasMessage("a quota's policy must be 1 to 64 of A-Z a-z 0-9 _ . - but was 'no spaces'");
    assertThatThrownBy(() -> Quota.rate("api", "", perHour(1)))
        .hasMessage("a quota's key must be 1 to 512 characters but was 0");
    assertThatThrownBy(() -> Quota.rate("api", "k", List.of()))
        .hasMessage("a quota has rate limits or a concurrency limit, one of them, but had neither"
            + " (key 'k')");
    assertThatThrownBy(() -> new Quota("api", "k", false, perHour(1), 2, null, ""))
        .hasMessage("a quota has rate limits or a concurrency limit, one of them, but had both"
            + " (key 'k')");
    assertThatThrownBy(() -> Quota.concurrency("db", "k", 0))
        .hasMessage("a quota's concurrency limit must be at least 1 but was 0");
    assertThatThrownBy(() -> Quota.concurrency("db", "k", 1).because("x".repeat(501)))
        .hasMessage("a quota's reason must be at most 500 characters but was 501");
    assertThatThrownBy(() -> Quotas.of(store).refreshEvery(Duration.ofMillis(1)))
        .hasMessage("refreshEvery must be between 10ms and 1h but was PT0.001S");
    assertThatThrownBy(() -> InMemoryQuotaStore.create(0, 1, now::get))
        .hasMessage("maxQuotas must be at least 1 but was 0");
  }

  /** A quota's limiter keys are prefixed by its limits' digest: other limits, other state. */
  @Test
  void quotaLimiters_keepTheirKeysApart_byTheirLimitsDigest() {
    assertThat(QuotaRateLimiter.digest(perHour(5))).hasSize(12)
        .isEqualTo(QuotaRateLimiter.digest(perHour(5)))
        .isNotEqualTo(QuotaRateLimiter.digest(perHour(6)));
  }

  /** What the stores keep: a quota and a change as one line each, decoded exactly. */
  @Test
  void theCodec_roundTripsQuotasAndChanges_whateverTheirText() {
    Quota q = new Quota("api", "tenant:a;b,c\td%e\nf", true, List.of(
        Limit.leakyBucket(2.5, Rate.of(1.25, Duration.ofMillis(250))).named("plan; 50%"),
        Limit.slidingWindow(100, Duration.ofMinutes(1)).withPenalty(Duration.ofSeconds(3)),
        Limit.gcra(Rate.perSecond(7), 3)), 0, Instant.parse("2026-12-04T18:00:00.123Z"),
        "launch\tweek, \"quoted\"");
    String line = QuotaCodec.encode(q);
    assertThat(line).doesNotContain("\n").doesNotContain("\r");
    assertThat(QuotaCodec.decode(line)).isEqualTo(q);
    Quota c = Quota.concurrency("db", "k", 3);
    assertThat(QuotaCodec.decode(QuotaCodec.encode(c))).isEqualTo(c);
    QuotaChange change = new QuotaChange(7, Instant.parse("2026-11-29T12:00:00Z"), "ops\tteam",
        q, c, "swap");
    assertThat(QuotaCodec.decodeChange(QuotaCodec.encode(change))).isEqualTo(change);
    assertThatThrownBy(() -> QuotaCodec.decode("q1\tapi")).hasMessageStartingWith(
        "a quota that cannot be read (not a quota of this version): 'q1");
  }

  /** Every way of asking goes to the key's quota: a cost of 3 fits its 5, not the policy's 2. */
  @Test
  void everyOperation_isDecidedByTheKeysQuota() throws Exception {
    Quotas quotas = Quotas.of(store, now::get);
    store.put(Quota.rate("api", "vip", perHour(5)), "ops");
    quotas.refresh();
    RateLimiter api = quotas.rateLimiter("api",
        Sluice.builder().limits(perHour(2).toArray(Limit[]::new)).build(),
        limits -> Sluice.builder().limits(limits.toArray(Limit[]::new)).build());
    assertThat(api.check("vip", 3).isAllowed()).isTrue();
    assertThat(api.check("other", 3).isAllowed()).isFalse();
    assertThat(api.checkAsync("vip", 3).join().isAllowed()).isTrue();
    assertThat(api.tryAcquireAsync("vip", 3).join().isAllowed()).isTrue();
    api.reset("vip");
    assertThat(api.reserve("vip", 3).isAllowed()).isTrue();
    api.reset("vip");
    assertThat(api.reserveAsync("vip", 3).join().isAllowed()).isTrue();
    api.reset("vip");
    assertThat(api.fillUp("vip", 3).isAllowed()).isTrue();
    api.reset("vip");
    assertThat(api.fillUpAsync("vip", 3).join().isAllowed()).isTrue();
    api.reset("vip");
    assertThat(api.acquire("vip", 3, Duration.ZERO).isAllowed()).isTrue();
    api.reset("vip");
    assertThat(api.acquireAsync("vip", 3, Duration.ZERO).join().isAllowed()).isTrue();
    assertThat(api.check("vip", 3).isAllowed()).as("the quota's bucket holds 3 of 5").isFalse();
    api.close();
  }
}
