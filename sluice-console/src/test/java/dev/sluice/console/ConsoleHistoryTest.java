package dev.sluice.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.LimiterStats;
import dev.sluice.TopKeys;
import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.concurrency.Permit;
import dev.sluice.quota.InMemoryQuotaStore;
import dev.sluice.quota.Quota;
import dev.sluice.quota.QuotaStore;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The console's document on a manual clock: decisions per second from the counters' deltas,
 * five minutes of samples and never more, a limit's keys with their limits, the quotas and their
 * changes; and the page as it ships, told where to read.
 */
class ConsoleHistoryTest {
  private final AtomicLong clock = new AtomicLong(1_700_000_000_000L);
  private final Map<String, Long> counts = new HashMap<>();
  private final TopKeys refused = TopKeys.of(16, Duration.ofMinutes(5));
  private final ConcurrencyLimiter db = ConcurrencyLimiter.builder().limit(3).build();
  private final QuotaStore quotas = InMemoryQuotaStore.create();

  private final ConsoleSource source = new ConsoleSource() {
    @Override
    public String instance() {
      return "test:1";
    }

    @Override
    public List<String> policies() {
      return List.of("api");
    }

    @Override
    public long decisions(String policy, String outcome) {
      return counts.getOrDefault(outcome, 0L);
    }

    @Override
    public LimiterStats stats(String policy) {
      return null;
    }

    @Override
    public boolean leased(String policy) {
      return false;
    }

    @Override
    public TopKeys refused(String policy) {
      return refused;
    }

    @Override
    public Map<String, ConcurrencyLimiter> limits() {
      return Map.of("db", db);
    }

    @Override
    public List<String> keys(String limit) {
      return List.of("orders");
    }

    @Override
    public TopKeys refusedPermits(String limit) {
      return null;
    }

    @Override
    public QuotaStore quotas() {
      return quotas;
    }
  };

  private static List<Object> list(Object map, String field) {
    return new java.util.ArrayList<>((List<?>) at(map, field));
  }

  private static Object at(Object map, String field) {
    return ((Map<?, ?>) map).get(field);
  }

  @Test
  void decisionsPerSecond_areTheCountersDeltas_overTheSamplesTime() {
    ConsoleHistory h = new ConsoleHistory(source, clock::get);
    h.sample();
    counts.put("allowed", 50L);
    counts.put("rejected", 8L);
    counts.put("unavailable", 2L);
    clock.addAndGet(2_000);
    h.sample();
    Map<String, Object> d = h.document();
    assertThat(d.get("instance")).isEqualTo("test:1");
    assertThat(list(d, "times")).containsExactly(1_700_000_000_000L,
        1_700_000_002_000L);
    Object api = ((List<?>) d.get("policies")).get(0);
    assertThat(list(api, "allowedPerSecond")).containsExactly(0.0, 25.0);
    assertThat(list(api, "refusedPerSecond")).as("rejected and unavailable")
        .containsExactly(0.0, 5.0);
    assertThat(at(api, "allowed")).isEqualTo(50L);
  }

  @Test
  void history_keepsFiveMinutes_oldestFirst_andNoMore() {
    ConsoleHistory h = new ConsoleHistory(source, clock::get);
    for (int i = 0; i < 1000; i++) {
      counts.put("allowed", (long) i * 10);
      h.sample();
      clock.addAndGet(1_000);
    }
    Map<String, Object> d = h.document();
    assertThat(ConsoleHistory.SAMPLES).isEqualTo(300);
    List<?> times = (List<?>) at(d, "times");
    assertThat(times).hasSize(300);
    assertThat(times.get(0)).as("the oldest kept").isEqualTo(1_700_000_000_000L + 700_000);
    Object api = ((List<?>) d.get("policies")).get(0);
    assertThat(list(api, "allowedPerSecond")).hasSize(300).containsOnly(10.0);
  }

  @Test
  void aLimit_itsInFlight_itsKeysLimits_theRefusedKeys_andTheQuotas() {
    ConsoleHistory h = new ConsoleHistory(source, clock::get);
    Permit p = db.tryAcquire("orders").permit();
    refused.add("flood", 30);
    refused.add("noisy", 3);
    quotas.put(new Quota("db", "orders", false, List.of(), 5, null, "bigger"), "ops");
    h.sample();
    Map<String, Object> d = h.document();
    Object limit = ((List<?>) d.get("limits")).get(0);
    assertThat(at(limit, "inFlight")).isEqualTo(1L);
    Object key = ((List<?>) at(limit, "keys")).get(0);
    assertThat(at(key, "key")).isEqualTo("orders");
    assertThat(at(key, "limit")).isEqualTo(3);
    assertThat(list(key, "limitHistory")).containsExactly(3.0);
    Object api = ((List<?>) d.get("policies")).get(0);
    assertThat(((List<?>) at(api, "topRefused"))).extracting(e -> at(e, "key"))
        .containsExactly("flood", "noisy");
    assertThat((List<?>) d.get("quotas")).hasSize(1);
    assertThat((List<?>) d.get("audit")).hasSize(1);
    assertThat(d.get("quotasOn")).isEqualTo(true);
    p.close();
  }

  @Test
  void thePage_shipsInTheJar_toldWhereToRead() {
    String page = new String(ConsoleAssets.page(new ConsoleAssets.Settings("../sluiceconsole",
        "../sluicequotas", false, true)), StandardCharsets.UTF_8);
    assertThat(page).contains("<meta name=\"sluice-console\" data-data=\"../sluiceconsole\""
        + " data-quotas=\"../sluicequotas\" data-auth=\"server\" data-quota-api=\"flat\">")
        .contains("<script src=\"console.js\" defer></script>")
        .doesNotContain("http://", "https://");
    for (String asset : List.of("console.js", "console.css", "favicon.svg")) {
      assertThat(ConsoleAssets.asset(asset)).isNotEmpty();
    }
    assertThat(ConsoleAssets.contentType("console.js")).isEqualTo("text/javascript; charset=utf-8");
    assertThatThrownBy(() -> ConsoleAssets.asset("evil.js"))
        .hasMessageContaining("no console asset 'evil.js'");
  }
}
