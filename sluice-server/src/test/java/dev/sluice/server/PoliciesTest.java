package dev.sluice.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.Algorithm;
import dev.sluice.Limit;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class PoliciesTest {
  private static void fails(String yaml, String... messages) {
    assertThatThrownBy(() -> Policies.parse("p.yaml", yaml)).isInstanceOf(ConfigException.class)
        .satisfies(e -> assertThat(((ConfigException) e).problems()).containsExactly(messages));
  }

  @Test
  void everyAlgorithm_andSeveralLimits() throws Exception {
    Policies p = Policies.parse("p.yaml", """
        policies:
          a: {algorithm: leaky-bucket, capacity: 10, rate: 1.5/s}
          b: {algorithm: token-bucket, capacity: 5, rate: 100/1m, penalty: 30s}
          c: {algorithm: gcra, burst: 3, rate: 5/250ms}
          d:
            limits:
              - {algorithm: fixed-window, limit: 100, window: 1h}
              - {algorithm: sliding-window, limit: 1000, window: 1d, name: daily}
        """);
    assertThat(p.all().keySet()).containsExactly("a", "b", "c", "d");
    Limit a = p.all().get("a").get(0);
    assertThat(a.algorithm()).isEqualTo(Algorithm.LEAKY_BUCKET);
    assertThat(a.rate().perSecond()).isEqualTo(1.5);
    assertThat(a.name()).isEqualTo("a");
    assertThat(p.all().get("b").get(0).penalty()).isEqualTo(Duration.ofSeconds(30));
    assertThat(p.all().get("c").get(0).rate().perSecond()).isEqualTo(20.0);
    List<Limit> d = p.all().get("d");
    assertThat(d).extracting(Limit::name).containsExactly("d/1", "daily");
    assertThat(d.get(1).window()).isEqualTo(Duration.ofDays(1));
  }

  @Test
  void problems_giveFileLineAndWhat_allAtOnce() {
    fails("policies:\n  a: {algorithm: leaky-bucket, capacity: x, rate: 1/s}\n",
        "p.yaml:2: policy 'a': 'capacity' must be a number but was 'x'");
    fails("policies:\n  a: {algorithm: leaky, capacity: 1, rate: 1/s}\n",
        "p.yaml:2: policy 'a': unknown algorithm 'leaky' (expected leaky-bucket, token-bucket, gcra, fixed-window or sliding-window)");
    fails("policies:\n  a:\n    algorithm: leaky-bucket\n    capacity: 1\n    rate: fast\n",
        "p.yaml:5: policy 'a': 'rate' must look like 10/s, 100/1m, 1.5/s or 5/250ms but was 'fast'");
    fails("policies:\n  a: {algorithm: fixed-window, limit: 1, window: 1 hour}\n",
        "p.yaml:2: policy 'a': 'window' must be a duration such as 250ms, 30s, 5m, 1h or 1d but was '1 hour'");
    fails("policies:\n  a: {algorithm: fixed-window, capacity: 1, window: 1h}\n",
        "p.yaml:2: policy 'a': 'capacity' is for buckets; a fixed-window takes 'limit' and 'window'");
    fails("policies:\n  a: {algorithm: leaky-bucket, capacity: 1, rate: 1/s, colour: red}\n  b: {capacity: 1}\n",
        "p.yaml:2: policy 'a': unknown key 'colour' (expected one of algorithm, capacity, rate, limit, window, penalty, name, maximumKeys)",
        "p.yaml:3: policy 'b': 'algorithm' is missing (leaky-bucket, token-bucket, gcra, fixed-window or sliding-window)");
    fails("policy:\n  a: {}\n", "p.yaml:1: unknown key 'policy' (expected 'policies', 'store', 'envoy' or 'concurrency')", "p.yaml:1: 'policies' is missing");
    fails("policies:\n  'bad name': {algorithm: gcra, burst: 1, rate: 1/s}\n",
        "p.yaml:2: policy name must be 1 to 64 of A-Z a-z 0-9 _ . - but was 'bad name'");
    fails("policies:\n  a: {algorithm: gcra, burst: 1, rate: 1/s}\n  a: {algorithm: gcra, burst: 1, rate: 1/s}\n",
        "p.yaml:3: policy 'a' is defined twice");
    fails("policies: [\n", "p.yaml:2: not valid YAML: expected the node content, but found '<stream end>'");
    fails("policies:\n  a:\n    limits: []\n", "p.yaml:3: policy 'a': 'limits' must be a non-empty list");
  }

  @Test
  void limitRulesOfCore_apply_withTheLine() {
    assertThatThrownBy(() -> Policies.parse("p.yaml", "policies:\n\n  a: {algorithm: leaky-bucket, capacity: 0, rate: 1/s}\n"))
        .hasMessageStartingWith("p.yaml:3: policy 'a': 'capacity' must be positive but was '0'");
  }

  @Test
  void groupPolicy_parsed_withItsDefaults_andGroupedByPrefix() throws Exception {
    Policies p = Policies.parse("p.yaml", """
        policies:
          tenants:
            maximumKeys: 1000
            group:
              parent: {algorithm: leaky-bucket, capacity: 1000, rate: 1000/s}
              assured: {algorithm: token-bucket, capacity: 100, rate: 100/s}
              ceiling:
                - {algorithm: leaky-bucket, capacity: 1000, rate: 1000/s}
                - {algorithm: gcra, burst: 500, rate: 500/s, name: spike}
              key: prefix
              separator: "::"
          service:
            group:
              parent: {algorithm: leaky-bucket, capacity: 10, rate: 10/s}
              assured: {algorithm: leaky-bucket, capacity: 1, rate: 1/s}
              reserve: 0
        """);
    Policies.GroupPolicy t = p.group("tenants");
    assertThat(t).isNotNull();
    assertThat(t.group().reserve()).as("default: half the parent").isEqualTo(500);
    assertThat(t.group().ceilings()).hasSize(2);
    assertThat(t.group().groupOf("acme::user-1")).isEqualTo("acme");
    assertThat(p.all().get("tenants")).extracting(Limit::name)
        .containsExactly("tenants/assured", "tenants/ceiling/1", "spike", "tenants/parent");
    assertThat(p.maximumKeys("tenants")).isEqualTo(1000);
    Policies.GroupPolicy s = p.group("service");
    assertThat(s.group().reserve()).isZero();
    assertThat(s.group().groupOf("anything")).isEqualTo("*");
    assertThat(s.group().ceilings()).isEmpty();
    assertThat(p.group("nope")).isNull();
  }

  @Test
  void groupPolicy_badSettings_namedWithTheirLines() {
    fails("""
        policies:
          g:
            group:
              parent: {algorithm: fixed-window, limit: 10, window: 1s}
              assured: {algorithm: leaky-bucket, capacity: 1, rate: 1/s}
        """, "p.yaml:4: policy 'g' group: parent g/parent is a fixed-window: the limits of a group"
        + " must be buckets (leaky-bucket, token-bucket or gcra), whose leak rate can be shared");
    fails("""
        policies:
          g:
            group:
              parent: {algorithm: leaky-bucket, capacity: 10, rate: 10/s}
              assured: {algorithm: leaky-bucket, capacity: 1, rate: 20/s}
        """, "p.yaml:5: policy 'g' group: assured g/assured has a higher rate than the parent"
        + " g/parent: one key alone would over-commit the group");
    fails("""
        policies:
          g:
            group:
              parent: {algorithm: leaky-bucket, capacity: 10, rate: 10/s}
              assured: {algorithm: leaky-bucket, capacity: 1, rate: 1/s}
              reserve: 10
              key: suffix
              color: blue
        """, "p.yaml:8: policy 'g' group: unknown key 'color' (expected one of assured, ceiling,"
        + " key, parent, reserve, separator)",
        "p.yaml:7: policy 'g' group: 'key' must be all or prefix but was 'suffix'");
    fails("""
        policies:
          g:
            group:
              parent: {algorithm: leaky-bucket, capacity: 10, rate: 10/s}
              assured: {algorithm: leaky-bucket, capacity: 1, rate: 1/s}
              reserve: 10
        """, "p.yaml:6: policy 'g' group: reserve must be at least 0 and below the parent's"
        + " capacity 10 but was 10");
    fails("""
        policies:
          g:
            group:
              assured: {algorithm: leaky-bucket, capacity: 1, rate: 1/s}
            algorithm: leaky-bucket
        """, "p.yaml:3: policy 'g' has 'group' and other keys; put the group's settings under"
        + " 'group' (maximumKeys may stay beside it)");
  }
}
