package dev.sluice.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.quota.Quota;
import dev.sluice.quota.QuotaChange;
import dev.sluice.quota.QuotaStore;
import dev.sluice.quota.Quotas;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * What every {@link QuotaStore} of a shared store must do: a change made through one instance's
 * store object is seen by another instance's {@link Quotas} within its refresh (bounded here at
 * 1 s with a refresh of 100 ms), every change is in the audit trail with who, when (on the
 * store's clock), before, after and why, text of any kind round-trips, and the bound on quotas
 * holds. A store's test class extends it.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/architecture.md#modules">docs/architecture.md, "Modules"</a>.
 */
public abstract class QuotaStoreSuite {
  /** For a store's test class, which extends this one. */
  protected QuotaStoreSuite() {}

  /**
   * A store object on the shared store, as another instance would make it: every call of one
   * test gets the same quotas (a fresh namespace per test), at most {@code maxQuotas}, the
   * newest {@code auditLength} changes kept.
   */
  protected abstract QuotaStore store(int maxQuotas, int auditLength);

  private static List<Limit> limits(int n) {
    return List.of(Limit.leakyBucket(n, Rate.perSecond(n)).named("plan; \"quoted\"\ttab"),
        Limit.fixedWindow(n * 60, Duration.ofMinutes(1)).withPenalty(Duration.ofSeconds(5)));
  }

  @Test
  public void aChangeOnOneInstance_isSeenByAnotherWithinItsRefresh() throws Exception {
    QuotaStore admin = store(100, 100);
    QuotaStore reader = store(100, 100);
    try (Quotas quotas = Quotas.of(reader).refreshEvery(Duration.ofMillis(100))) {
      assertThat(quotas.find("api", "customer:acme")).isNull();
      Quota q = Quota.rate("api", "customer:acme", limits(500))
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
      // the figure docs/quotas.md reports, in the test's output
      System.out.printf("%s: a quota change seen by another instance after %d ms (refresh"
          + " 100 ms, bound 1000)%n", getClass().getSimpleName(), seenMs);
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
  public void everyChange_isAudited_onTheStoresClock_andTheBoundIsKept() {
    QuotaStore store = store(2, 3);
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
    assertThat(store.put(Quota.concurrency("db", "k1", 2), "x")).as("a replacement fits")
        .isEqualTo(6);
    assertThat(store.audit(10)).as("the newest 3 kept").hasSize(3);
    assertThat(store.audit(0)).isEmpty();
    assertThat(store.read().quotas()).hasSize(2);
    assertThat(store.read().version()).isEqualTo(6);
    assertThat(store.version()).isEqualTo(6);
  }
}
