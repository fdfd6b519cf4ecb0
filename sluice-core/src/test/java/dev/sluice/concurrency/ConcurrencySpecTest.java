package dev.sluice.concurrency;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

/**
 * The one reader of concurrency limits that the service's policies file and the Spring starter
 * both use: its defaults are the library's, text and typed values read alike, and every problem
 * is reported at once, named in the caller's spelling.
 */
class ConcurrencySpecTest {
  private final List<String> problems = new ArrayList<>();

  private ConcurrencySpec parse(Map<String, ?> fields) {
    return parse(fields, f -> f);
  }

  private ConcurrencySpec parse(Map<String, ?> fields, UnaryOperator<String> spelling) {
    return ConcurrencySpec.parse("db", fields, spelling,
        (field, message) -> problems.add(field + ": " + message));
  }

  @Test
  void defaults_areTheLibrarys() {
    ConcurrencySpec s = parse(Map.of("limit", "20"));
    assertThat(problems).isEmpty();
    assertThat(s.limit()).isEqualTo(20);
    assertThat(s.lease()).isEqualTo(ConcurrencyLimiter.DEFAULT_LEASE).isEqualTo(Duration.ofSeconds(30));
    assertThat(s.maxWaiters()).isEqualTo(ConcurrencyLimiter.DEFAULT_MAX_WAITERS).isEqualTo(100);
    assertThat(s.maximumKeys()).isEqualTo(ConcurrencyLimiter.DEFAULT_MAXIMUM_KEYS);
    assertThat(s.order()).isEqualTo(QueueOrder.FIFO);
    assertThat(s.adaptive()).isEqualTo("none");
    assertThat(s.shares()).isEmpty();
    assertThat(s.codelTarget()).isNull();
    assertThat(s.group()).isNull();
    assertThat(s.fair()).isNull();
    ConcurrencyLimiter l = s.builder().build();
    assertThat(l.limit("k")).isEqualTo(20);
    l.close();
  }

  @Test
  void textAndTypedValues_readAlike() {
    Map<String, Object> text = new LinkedHashMap<>();
    text.put("limit", "7");
    text.put("lease", "1500ms");
    text.put("maxWaiters", "3");
    text.put("queueOrder", "LIFO");
    text.put("shares", Map.of("sheddable", "0.5"));
    text.put("codelTarget", "5ms");
    text.put("codelInterval", "100ms");
    Map<String, Object> typed = new LinkedHashMap<>();
    typed.put("limit", 7);
    typed.put("lease", Duration.ofMillis(1500));
    typed.put("maxWaiters", 3L);
    typed.put("queueOrder", "lifo");
    typed.put("shares", Map.of("sheddable", 0.5));
    typed.put("codelTarget", Duration.ofMillis(5));
    typed.put("codelInterval", Duration.ofMillis(100));
    ConcurrencySpec a = parse(text);
    ConcurrencySpec b = parse(typed);
    assertThat(problems).isEmpty();
    assertThat(a).isEqualTo(b);
    assertThat(a.order()).isEqualTo(QueueOrder.LIFO);
    assertThat(a.shares()).containsExactly(Map.entry(Priority.SHEDDABLE, 0.5));
  }

  @Test
  void everyProblem_isReportedAtOnce_inTheCallersSpelling() {
    Map<String, Object> bad = new LinkedHashMap<>();
    bad.put("limit", "0");
    bad.put("lease", "soon");
    bad.put("maxWaiters", "-1");
    bad.put("shares", Map.of("sheddable", "2"));
    bad.put("codelTarget", "5ms");
    bad.put("burst", "3");
    assertThat(parse(bad, f -> f.replace("maxWaiters", "max-waiters"))).isNull();
    assertThat(problems).containsExactlyInAnyOrder(
        "burst: unknown key 'burst' (expected one of adaptive, codelInterval, codelTarget, fair,"
            + " group, initialLimit, lease, limit, maxLimit, max-waiters, maximumKeys, minLimit,"
            + " queueOrder, shares)",
        "limit: 'limit' must be a whole number from 1 to 2147483647 but was '0'",
        "lease: 'lease' must be a duration such as 250ms, 30s, 5m, 1h or 1d but was 'soon'",
        "maxWaiters: 'max-waiters' must be a whole number from 0 to 1000000 but was '-1'",
        "shares.sheddable: the share of sheddable must be between 0 and 1 but was '2'",
        "codelInterval: CoDel needs both 'codelTarget' and 'codelInterval' (such as 5ms and"
            + " 100ms)");
  }

  @Test
  void aLimitIsFixedOrAdaptive_notBothNorNeither() {
    assertThat(parse(Map.of("lease", "1s"))).isNull();
    assertThat(parse(Map.of("limit", "4", "adaptive", "aimd"))).isNull();
    assertThat(parse(Map.of("adaptive", "gradient", "minLimit", "9", "maxLimit", "5"))).isNull();
    assertThat(problems).containsExactly(
        "limit: 'limit' is missing (the most permits in flight per key, or adaptive: gradient)",
        "limit: 'limit' and 'adaptive: aimd' exclude each other (bound an adaptive limit with"
            + " minLimit and maxLimit)",
        "minLimit: 'minLimit' (9) is above 'maxLimit' (5)");
    ConcurrencySpec g = parse(Map.of("adaptive", "Gradient", "initialLimit", "3"));
    assertThat(g.adaptive()).isEqualTo("gradient");
    assertThat(g.builder().build().limit("k")).isEqualTo(3);
  }

  @Test
  void sharesMayNotGrowAsPriorityFalls() {
    assertThat(parse(Map.of("limit", "10", "shares", Map.of("normal", "0.5", "sheddable",
        "0.8")))).isNull();
    assertThat(problems).containsExactly("shares.sheddable: 'shares.sheddable' (0.8) is above a"
        + " higher priority's share (0.5): a lower priority may not use more of the permits");
  }

  @Test
  void aGroup_isBuilt_andItsAssuredKeysMatchTheKeyARuleBuilds() {
    ConcurrencySpec s = parse(Map.of("group", Map.of("limit", "10", "assured", "1",
        "assuredKeys", Map.of("acme/live", "6"), "key", "prefix")));
    assertThat(problems).isEmpty();
    assertThat(s.limit()).as("the group's keys need no limit of their own").isZero();
    ConcurrencyLimiter l = s.builder().build();
    // acme/live is assured 6 of the group's 10 (the separator defaults to /), by its own name
    // and by the key a header rule builds from it
    for (String key : List.of("acme/live", "x-tenant:acme/live")) {
      assertThat(ConcurrencySpec.assuredOf(Map.of("acme/live", 6), key, 1)).isEqualTo(6);
    }
    assertThat(ConcurrencySpec.assuredOf(Map.of("acme/live", 6), "acme/batch", 1)).isEqualTo(1);
    assertThat(l.tryAcquire("acme/live").isAcquired()).isTrue();
    l.close();
    assertThat(parse(Map.of("group", Map.of("assured", "2")))).isNull();
    assertThat(parse(Map.of("group", Map.of("limit", "4", "assured", "5", "separator", ":"))))
        .isNull();
    assertThat(parse(Map.of("adaptive", "gradient", "group", Map.of("limit", "4")))).isNull();
    assertThat(problems).containsExactlyInAnyOrder(
        "group.limit: 'group.limit' is missing (the permits in flight the group's keys hold at"
            + " most, together)",
        "group.assured: 'group.assured' must be a whole number from 0 to 4 but was '5'",
        "group.separator: 'group.separator' applies with 'group.key: prefix'",
        "group: adaptive limits and groups do not combine yet (a group's keys share a fixed"
            + " limit)");
  }

  @Test
  void fairQueuing_isBuilt_withItsDefaults_andBadSettingsAreNamed() {
    ConcurrencySpec s = parse(Map.of("limit", "2", "fair", Map.of()));
    assertThat(problems).isEmpty();
    assertThat(s.fair()).isEqualTo(FairQueuing.of(1024, 6, 100));
    assertThat(s.fair().memory()).isEqualTo(Duration.ofSeconds(10));
    ConcurrencySpec t = parse(Map.of("limit", "2", "fair", Map.of("queues", "64", "handSize", 4,
        "queueLength", "5", "memory", "30s")));
    assertThat(t.fair()).isEqualTo(FairQueuing.of(64, 4, 5).withMemory(Duration.ofSeconds(30)));
    ConcurrencyLimiter l = t.builder().build();
    Permit held = l.tryAcquire("k", 2).permit();
    assertThat(l.acquireAsync("k", "tenant-a", 1, Priority.NORMAL, Duration.ofSeconds(1)))
        .isNotDone();
    assertThat(l.stats().flows(Priority.NORMAL)).as("its waiters are fair queued (a real clock:"
        + " the count decays a little)").isBetween(0.9, 1.0);
    held.close();
    l.close();
    assertThat(parse(Map.of("limit", "2", "fair", Map.of("queues", "8", "handSize", "9",
        "queueLength", "0", "memory", "0s", "flows", "x")), f -> f.replace("handSize",
        "hand-size"))).isNull();
    assertThat(parse(Map.of("limit", "2", "fair", "yes"))).isNull();
    assertThat(problems).containsExactlyInAnyOrder(
        "fair.flows: unknown key 'fair.flows' (expected one of fair.hand-size, fair.memory,"
            + " fair.queueLength, fair.queues)",
        "fair.handSize: 'fair.hand-size' (9) is above 'fair.queues' (8)",
        "fair.queueLength: 'fair.queueLength' must be a whole number from 1 to 1000000 but was"
            + " '0'",
        "fair.memory: 'fair.memory' must be a duration such as 250ms, 30s, 5m, 1h or 1d but was"
            + " '0s'",
        "fair: 'fair' must be a mapping such as {queues: 1024, handSize: 6, queueLength: 100,"
            + " memory: 10s}");
  }

  @Test
  void aBadName_isNamed() {
    assertThat(ConcurrencySpec.parse("no spaces", Map.of("limit", "1"), f -> f,
        (field, message) -> problems.add(message))).isNull();
    assertThat(problems).containsExactly("a concurrency limit's name must be 1 to 64 of A-Z a-z"
        + " 0-9 _ . - but was 'no spaces'");
  }

  @Test
  void durationsAreQuotedAsFilesWriteThem() {
    assertThat(ConcurrencySpec.show(Duration.ofSeconds(1))).isEqualTo("1s");
    assertThat(ConcurrencySpec.show(Duration.ofMillis(100))).isEqualTo("100ms");
    assertThat(ConcurrencySpec.show(Duration.ofMinutes(90))).isEqualTo("90m");
    assertThat(ConcurrencySpec.show(Duration.ofNanos(1_500_000))).isEqualTo("1.5ms");
    assertThat(ConcurrencySpec.show(Duration.ZERO)).isEqualTo("0s");
  }
}
