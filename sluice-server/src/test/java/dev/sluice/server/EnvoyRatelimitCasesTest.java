package dev.sluice.server;

import static dev.sluice.server.EnvoyHarness.descriptor;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.UInt64Value;
import dev.sluice.RateLimiter;
import io.envoyproxy.envoy.config.core.v3.HeaderValue;
import io.envoyproxy.envoy.extensions.common.ratelimit.v3.RateLimitDescriptor;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.DescriptorStatus;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.RateLimit.Unit;
import io.envoyproxy.envoy.type.v3.RateLimitUnit;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The behaviour envoyproxy/ratelimit's own tests pin down, case by case, on Sluice's own
 * fixtures ({@code src/test/resources/envoy/cases}): its {@code test/config/config_test.go}
 * (what loads, what is refused, what a descriptor matches), {@code test/service/ratelimit_test.go}
 * (how statuses make an answer), {@code test/redis/fixed_cache_impl_test.go} and
 * {@code test/integration/integration_test.go} (the counter, in the fixed-window mode that is
 * ratelimit's). Each test names the ratelimit test it follows. docs/envoy.md lists what is
 * still different, and why.
 */
class EnvoyRatelimitCasesTest {
  private static final EnvoyConfig.Settings FIXED = new EnvoyConfig.Settings(1_000_000_000L,
      "fixed-window", false);

  private static EnvoyHarness fixed(String... resources) throws ConfigException {
    return EnvoyHarness.of(FIXED, settings("fixed-window"), resources);
  }

  /**
   * A harness in either mode: ratelimit's counter, or the default leaky bucket, for the cases
   * where the algorithm does not decide the answer (matching, limits, names, codes before time
   * passes).
   */
  private static EnvoyHarness in(String algorithm, String... resources) throws ConfigException {
    return EnvoyHarness.of(new EnvoyConfig.Settings(1_000_000_000L, algorithm, false),
        settings(algorithm), resources);
  }

  private static EnvoyConfig parse(String algorithm, String name, String yaml)
      throws ConfigException {
    return EnvoyConfig.parse(Map.of(name, yaml), new EnvoyConfig.Settings(1_000_000_000L,
        algorithm, false));
  }

  private static EnvoyService.Settings settings(String algorithm) {
    return new EnvoyService.Settings(true, EnvoyService.Headers.NONE, false, algorithm,
        System::currentTimeMillis);
  }

  private static RateLimitResponse.RateLimit limit(int perUnit, Unit unit, String name) {
    return RateLimitResponse.RateLimit.newBuilder().setRequestsPerUnit(perUnit).setUnit(unit)
        .setName(name).build();
  }

  private static DescriptorStatus status(Code code, RateLimitResponse.RateLimit limit,
      int remaining, long resetSeconds) {
    return DescriptorStatus.newBuilder().setCode(code).setCurrentLimit(limit)
        .setLimitRemaining(remaining)
        .setDurationUntilReset(com.google.protobuf.Duration.newBuilder().setSeconds(resetSeconds))
        .build();
  }

  private static final DescriptorStatus NO_LIMIT = DescriptorStatus.newBuilder()
      .setCode(Code.OK).build();

  /** config_test.go: TestBasicConfig, TestShadowModeConfig, TestConfigLimitOverride. */
  @Nested
  class Matching {
    @ParameterizedTest
    @ValueSource(strings = {"fixed-window", "leaky-bucket"})
    void basicConfig_eachDescriptorFindsTheLimitRatelimitFinds(String mode) throws Exception {
      EnvoyHarness h = in(mode, "shop.yaml");
      assertThat(h.one("nowhere", "client", "a")).as("unknown domain").isEqualTo(NO_LIMIT);
      assertThat(h.ask("shop", 1, RateLimitDescriptor.getDefaultInstance()).getStatuses(0))
          .as("a descriptor without entries").isEqualTo(NO_LIMIT);
      assertThat(h.one("shop", "region", "us")).as("no default at the first level")
          .isEqualTo(NO_LIMIT);
      assertThat(h.one("shop", "region", "eu")).as("a node without a limit").isEqualTo(NO_LIMIT);
      assertThat(h.one("shop", "client", "partner", "sub", "x"))
          .as("more entries than the tree is deep").isEqualTo(NO_LIMIT);
      assertThat(h.one("shop", "plan", "gold", "seat", "s2"))
          .as("the second entry matches no child").isEqualTo(NO_LIMIT);
      assertThat(h.one("shop", "region", "eu", "store", "lyon").getCurrentLimit())
          .as("second level, any value").isEqualTo(limit(4, Unit.SECOND, ""));
      assertThat(h.one("shop", "region", "eu", "store", "paris").getCurrentLimit())
          .as("second level, this value").isEqualTo(limit(8, Unit.SECOND, ""));
      assertThat(h.one("shop", "client", "someone").getCurrentLimit())
          .isEqualTo(limit(12, Unit.MINUTE, ""));
      assertThat(h.one("shop", "client", "partner").getCurrentLimit())
          .isEqualTo(limit(40, Unit.MINUTE, ""));
      assertThat(h.one("shop", "client", "internal")).as("a value listed without a limit")
          .isEqualTo(NO_LIMIT);
      assertThat(h.one("shop", "ip", "10.0.0.1").getCurrentLimit().getName())
          .as("no name configured: empty").isEmpty();
      assertThat(h.one("shop", "token", "t").getCurrentLimit())
          .isEqualTo(limit(3, Unit.DAY, "token_limit"));
      assertThat(h.one("shop", "plan", "gold").getCurrentLimit())
          .isEqualTo(limit(15, Unit.DAY, ""));
      assertThat(h.one("shop", "plan", "gold", "seat", "s1").getCurrentLimit())
          .isEqualTo(limit(25, Unit.DAY, ""));
      DescriptorStatus unlimited = h.one("shop", "health", "check");
      assertThat(unlimited.getCode()).isEqualTo(Code.OK);
      assertThat(unlimited.hasCurrentLimit()).isFalse();
      assertThat(Integer.toUnsignedLong(unlimited.getLimitRemaining())).isEqualTo(4294967295L);
      assertThat(unlimited.hasDurationUntilReset()).isFalse();
      assertThat(h.one("shop", "user", "u1").getCurrentLimit().getRequestsPerUnit())
          .as("detailed_metric changes no answer").isEqualTo(70);
    }

    @Test
    void shadowMode_isPerNode_andAnsweredOkWithNothingRemaining() throws Exception {
      EnvoyConfig c = EnvoyConfig.parse(Map.of("s.yaml", String.join("\n",
          "domain: s",
          "descriptors:",
          "  - key: a",
          "    shadow_mode: true",
          "    rate_limit: {unit: minute, requests_per_unit: 1}",
          "  - key: a",
          "    value: loud",
          "    rate_limit: {unit: minute, requests_per_unit: 1}", "")), FIXED);
      EnvoyHarness h = new EnvoyHarness(c, settings("fixed-window"));
      assertThat(h.one("s", "a", "x").getLimitRemaining()).isZero();
      RateLimitResponse over = h.ask("s", 1, descriptor("a", "x"));
      assertThat(over.getOverallCode()).isEqualTo(Code.OK);
      assertThat(over.getStatuses(0)).isEqualTo(status(Code.OK, limit(1, Unit.MINUTE, ""), 0, 50));
      h.one("s", "a", "loud");
      assertThat(h.ask("s", 1, descriptor("a", "loud")).getOverallCode())
          .as("its sibling with a value is not in shadow mode").isEqualTo(Code.OVER_LIMIT);
      RateLimitResponse mixed = h.ask("s", 1, descriptor("a", "x"), descriptor("a", "loud"));
      assertThat(mixed.getOverallCode()).as("TestMixedRuleShadowMode").isEqualTo(Code.OVER_LIMIT);
      assertThat(mixed.getStatuses(0).getCode()).isEqualTo(Code.OK);
      assertThat(mixed.getStatuses(1).getCode()).isEqualTo(Code.OVER_LIMIT);
    }

    @Test
    void limitOverride_replacesTheConfiguredLimit_evenWithoutOne() throws Exception {
      EnvoyHarness h = fixed("shop.yaml");
      RateLimitDescriptor.RateLimitOverride tenADay = RateLimitDescriptor.RateLimitOverride
          .newBuilder().setRequestsPerUnit(10).setUnit(RateLimitUnit.DAY).build();
      RateLimitDescriptor d = descriptor("region", "eu", "store", "lyon").toBuilder()
          .setLimit(tenADay).build();
      assertThat(h.ask("shop", 1, d).getStatuses(0))
          .isEqualTo(status(Code.OK, limit(10, Unit.DAY, ""), 9, 86_390));
      RateLimitDescriptor other = descriptor("region", "eu", "store", "nice").toBuilder()
          .setLimit(tenADay).build();
      assertThat(h.ask("shop", 1, other).getStatuses(0).getLimitRemaining())
          .as("another value: another counter").isEqualTo(9);
      RateLimitDescriptor unconfigured = descriptor("nothing", "here").toBuilder()
          .setLimit(tenADay.toBuilder().setRequestsPerUnit(1)).build();
      assertThat(h.ask("shop", 1, unconfigured).getStatuses(0).getCurrentLimit())
          .as("an override applies where no limit is configured, as in ratelimit")
          .isEqualTo(limit(1, Unit.DAY, ""));
      assertThat(h.ask("shop", 1, unconfigured).getOverallCode()).isEqualTo(Code.OVER_LIMIT);
      assertThat(h.ask("nowhere", 1, unconfigured).getStatuses(0))
          .as("not in an unknown domain").isEqualTo(NO_LIMIT);
      RateLimitDescriptor week = descriptor("client", "w").toBuilder().setLimit(
          RateLimitDescriptor.RateLimitOverride.newBuilder().setRequestsPerUnit(5)
              .setUnitValue(7)).build();
      assertThat(h.ask("shop", 1, week).getStatuses(0).getCurrentLimit())
          .as("WEEK, number 7 on the wire").isEqualTo(limit(5, Unit.WEEK, ""));
      RateLimitDescriptor unknownUnit = descriptor("client", "u").toBuilder().setLimit(
          tenADay.toBuilder().setUnit(RateLimitUnit.UNKNOWN)).build();
      assertThat(h.ask("shop", 1, unknownUnit).getStatuses(0).getCurrentLimit())
          .as("an override without a unit is ignored: the configured limit applies")
          .isEqualTo(limit(12, Unit.MINUTE, ""));

      for (int i = 0; i < EnvoyService.MAX_OVERRIDES + 5; i++) {
        RateLimitDescriptor many = descriptor("client", "many").toBuilder().setLimit(
            tenADay.toBuilder().setRequestsPerUnit(1_000 + i)).build();
        DescriptorStatus got = h.ask("shop", 1, many).getStatuses(0);
        assertThat(got.getCode()).as("override rate %s of at most %s", i + 1,
            EnvoyService.MAX_OVERRIDES).isEqualTo(
                i + 3 < EnvoyService.MAX_OVERRIDES ? Code.OK : Code.OVER_LIMIT);   // 3 made above
      }

      EnvoyHarness off = EnvoyHarness.of(FIXED, new EnvoyService.Settings(false,
          EnvoyService.Headers.NONE, false, "fixed-window", System::currentTimeMillis),
          "shop.yaml");
      assertThat(off.ask("shop", 1, d).getStatuses(0).getCurrentLimit())
          .as("overrides turned off").isEqualTo(limit(4, Unit.SECOND, ""));
    }
  }

  /** config_test.go: TestWildcardConfig; README example 9. */
  @ParameterizedTest
  @ValueSource(strings = {"fixed-window", "leaky-bucket"})
  void wildcards_anywhereInTheValue_matchAsRatelimitMatches(String mode) throws Exception {
    EnvoyHarness h = in(mode, "wildcards.yaml");
    assertThat(h.one("wild", "path", "/img/a.png").hasCurrentLimit()).isTrue();
    assertThat(h.one("wild", "path", "/img/").hasCurrentLimit()).as("* matches nothing too")
        .isTrue();
    assertThat(h.one("wild", "path", "/css/a.css")).isEqualTo(NO_LIMIT);
    assertThat(h.one("wild", "exact", "/img/x")).as("no star: no prefix match")
        .isEqualTo(NO_LIMIT);
    assertThat(h.one("wild", "any", "whatever").hasCurrentLimit()).isTrue();
    assertThat(h.one("wild", "mid", "ab-yz").hasCurrentLimit()).isTrue();
    assertThat(h.one("wild", "mid", "abyz").hasCurrentLimit()).as("an empty middle").isTrue();
    assertThat(h.one("wild", "mid", "ab-y")).as("missing suffix").isEqualTo(NO_LIMIT);
    assertThat(h.one("wild", "mid", "xab-yz")).as("missing prefix").isEqualTo(NO_LIMIT);
    assertThat(h.one("wild", "multi", "/api/v1/users/42/edit").getCurrentLimit()
        .getRequestsPerUnit()).isEqualTo(10);
    assertThat(h.one("wild", "multi", "/api/v1/users//edit").hasCurrentLimit()).isTrue();
    assertThat(h.one("wild", "multi", "/api/v1/groups/42/edit")).as("a middle part missing")
        .isEqualTo(NO_LIMIT);
    assertThat(h.one("wild", "multi", "/api/v1/users/42/view")).isEqualTo(NO_LIMIT);
    assertThat(h.one("wild", "tenant", "t1", "path", "/docs/x").hasCurrentLimit())
        .as("nested").isTrue();
    for (int i = 0; i < 10; i++) {
      h.one("wild", "multi", "/api/v2/users/7/edit");
    }
    assertThat(h.one("wild", "multi", "/api/v2/users/7/edit").getCode())
        .as("the limit is applied, not only matched").isEqualTo(Code.OVER_LIMIT);
    assertThat(h.one("wild", "multi", "/api/v2/users/8/edit").getCode())
        .as("without share_threshold each value counts alone").isEqualTo(Code.OK);
  }

  /** config_test.go: TestShareThreshold; integration_test.go: TestShareThreshold. */
  @ParameterizedTest
  @ValueSource(strings = {"fixed-window", "leaky-bucket"})
  void shareThreshold_valuesMatchingOneWildcardShareOneCounter(String mode) throws Exception {
    EnvoyHarness h = in(mode, "shared.yaml");
    assertThat(h.one("share", "file", "docs/a").getLimitRemaining()).isEqualTo(2);
    assertThat(h.one("share", "file", "docs/b").getLimitRemaining()).isEqualTo(1);
    assertThat(h.one("share", "file", "docs/c").getLimitRemaining()).isZero();
    assertThat(h.one("share", "file", "docs/d").getCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(h.one("share", "file", "docs/readme").getCurrentLimit().getRequestsPerUnit())
        .as("an exact value wins over the wildcard").isEqualTo(50);
    assertThat(h.one("share", "file", "img/a").getLimitRemaining()).isEqualTo(2);
    assertThat(h.one("share", "file", "img/b").getLimitRemaining())
        .as("no share_threshold: each value its own counter").isEqualTo(2);
    assertThat(h.one("share", "team", "team-a", "action", "read").getLimitRemaining()).isEqualTo(1);
    assertThat(h.one("share", "team", "team-b", "action", "read").getLimitRemaining())
        .as("the shared level below a wildcard with nested descriptors").isZero();
    assertThat(h.one("share", "team", "team-b", "action", "write").getLimitRemaining())
        .as("the level below is still per value").isEqualTo(1);
    assertThat(h.one("share", "route", "/v1/orders").getLimitRemaining()).isEqualTo(1);
    assertThat(h.one("share", "route", "/v2/orders").getLimitRemaining()).as("middle wildcard")
        .isZero();
    assertThat(h.one("share", "org", "org-a", "repo", "repo-1").getLimitRemaining()).isEqualTo(1);
    assertThat(h.one("share", "org", "org-b", "repo", "repo-1").getLimitRemaining())
        .as("the org shared, the repo the same").isZero();
    assertThat(h.one("share", "org", "org-b", "repo", "repo-2").getLimitRemaining())
        .as("another repo: its own").isEqualTo(1);
  }

  /** config_test.go: TestDomainMerge, TestDuplicateDomain, TestDuplicateKeyDomainMerge. */
  @Test
  void domains_mergeOnlyWhenAsked_andDuplicatesAreRefusedEitherWay() throws Exception {
    assertThatThrownBy(() -> EnvoyConfig.parse(EnvoyHarness.texts("merge-a.yaml",
        "merge-b.yaml"), FIXED))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("merge-b.yaml:1: duplicate domain 'merged' in config file");
    EnvoyHarness merged = EnvoyHarness.of(new EnvoyConfig.Settings(1_000_000_000L,
        "fixed-window", true), settings("fixed-window"), "merge-a.yaml", "merge-b.yaml");
    assertThat(merged.one("merged", "a", "x").getCurrentLimit().getRequestsPerUnit())
        .isEqualTo(10);
    assertThat(merged.one("merged", "b", "x").getCurrentLimit().getRequestsPerUnit())
        .as("metadata loads").isEqualTo(20);
    assertThatThrownBy(() -> EnvoyConfig.parse(Map.of("one.yaml", "domain: merged\n"
        + "descriptors:\n  - key: a\n", "two.yaml", "domain: merged\ndescriptors:\n  - key: a\n"),
        new EnvoyConfig.Settings(1_000_000_000L, "fixed-window", true)))
        .hasMessageContaining(":3: merged.a: duplicate descriptor composite key 'merged.a'");
  }

  /**
   * config_test.go: every configuration ratelimit refuses (TestEmptyDomain, TestEmptyKey,
   * TestDuplicateKey, TestBadLimitUnit, TestReplacesSelf, TestReplacesEmpty, TestBadYaml,
   * TestMisspelledKey, TestNonStringKey, TestNonMapList, TestUnlimitedWithRateLimitUnit), refused
   * with file, line and key; and those it loads that Sluice used to refuse.
   */
  @Nested
  class Loading {
    private List<String> problems(String yaml) {
      try {
        EnvoyConfig.parse(Map.of("f.yaml", yaml), FIXED);
      } catch (ConfigException e) {
        return e.problems();
      }
      throw new AssertionError("loaded:\n" + yaml);
    }

    @Test
    void whatRatelimitRefuses_isRefused_namingFileLineAndKey() {
      assertThat(problems("descriptors:\n")).containsExactly(
          "f.yaml:1: config file cannot have empty domain");
      assertThat(problems("domain: d\ndescriptors:\n  - value: v\n")).containsExactly(
          "f.yaml:3: d.<descriptor>: descriptor has empty key");
      assertThat(problems("domain: d\ndescriptors:\n  - key: k\n    value: v\n"
          + "  - key: k\n    value: v\n")).containsExactly(
          "f.yaml:5: d.k_v: duplicate descriptor composite key 'd.k_v'");
      assertThat(problems("domain: d\ndescriptors:\n  - key: k\n"
          + "    rate_limit: {unit: foo, requests_per_unit: 5}\n")).containsExactly(
          "f.yaml:4: d.k: invalid rate limit unit 'foo' (expected second, minute, hour, day,"
              + " week, month or year)");
      assertThat(problems("domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n"
          + "      name: self\n      unit: second\n      requests_per_unit: 5\n"
          + "      replaces:\n        - name: self\n")).containsExactly(
          "f.yaml:9: d.k: replaces should not contain name of same descriptor ('self')");
      assertThat(problems("domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n"
          + "      unit: second\n      requests_per_unit: 5\n      replaces:\n"
          + "        - name: ''\n")).containsExactly(
          "f.yaml:8: d.k: should not have an empty replaces entry");
      assertThat(problems("'''\n")).singleElement().asString()
          .startsWith("f.yaml:2: not valid YAML: ");
      assertThat(problems("domain: d\ndescriptors:\n  - key: k\n    ratelimit:\n"
          + "      unit: second\n")).containsExactly(
          "f.yaml:4: d.k: config error, unknown key 'ratelimit' (expected one of"
              + " descriptors, detailed_metric, key, metadata, policy, quota_mode, rate_limit,"
              + " shadow_mode, share_threshold, sluice, value, value_to_metric)");
      assertThat(problems("domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n"
          + "      unit: day\n      requestsperunit: 5\n")).containsExactly(
          "f.yaml:6: d.k.rate_limit: config error, unknown key 'requestsperunit' (expected one"
              + " of name, replaces, requests_per_unit, unit, unlimited)");
      assertThat(problems("0.25: d\ndescriptors:\n  - key: k\n")).contains(
          "f.yaml:1: the file: config error, key is not of type string: 0.25");
      assertThat(problems("domain: d\ndescriptors:\n  - a\n  - b\n")).containsExactly(
          "f.yaml:3: d: config error, yaml file contains list of type other than map: a",
          "f.yaml:4: d: config error, yaml file contains list of type other than map: b");
      assertThat(problems("domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n"
          + "      unlimited: true\n      unit: day\n      requests_per_unit: 25\n"))
          .containsExactly("f.yaml:6: d.k: should not specify rate limit unit when unlimited");
      assertThat(problems("domain: d\ndescriptors:\n  - key: k\n    value: v\n"
          + "    share_threshold: true\n    rate_limit: {unit: second, requests_per_unit: 1}\n"))
          .containsExactly("f.yaml:5: d.k_v: share_threshold can only be used with wildcard"
              + " values (containing '*'), but found key 'k_v'");
      assertThat(problems("domain: d\ndescriptors:\n  - key: k\n"
          + "    rate_limit: {unit: second}\n  - key: j\n    rate_limit: {requests_per_unit: 3}\n"))
          .as("a rate_limit with no unit and not unlimited").containsExactly(
              "f.yaml:6: d.j: invalid rate limit unit '' (expected second, minute, hour, day,"
                  + " week, month or year)");
    }

    @Test
    void requestsPerUnit_isTheWiresUint32() throws Exception {
      assertThat(problems("domain: d\ndescriptors:\n  - key: k\n"
          + "    rate_limit: {unit: second, requests_per_unit: 4294967296}\n")).containsExactly(
          "f.yaml:4: d.k: 'requests_per_unit' must be a whole number from 0 to 4294967295 (the"
              + " wire's uint32) but was '4294967296'");
      assertThat(problems("domain: d\ndescriptors:\n  - key: k\n"
          + "    rate_limit: {unit: second, requests_per_unit: -1}\n")).singleElement().asString()
          .contains("but was '-1'");
      EnvoyHarness h = new EnvoyHarness(EnvoyConfig.parse(Map.of("f.yaml", "domain: d\n"
          + "descriptors:\n  - key: k\n"
          + "    rate_limit: {unit: second, requests_per_unit: 4294967295}\n"), FIXED),
          settings("fixed-window"));
      DescriptorStatus s = h.one("d", "k", "x");
      assertThat(Integer.toUnsignedLong(s.getCurrentLimit().getRequestsPerUnit()))
          .isEqualTo(4294967295L);
      assertThat(Integer.toUnsignedLong(s.getLimitRemaining())).isEqualTo(4294967294L);
    }

    @Test
    void whatRatelimitLoads_loads() throws Exception {
      EnvoyConfig c = EnvoyConfig.parse(Map.of("f.yaml", String.join("\n",
          "domain: d",
          "descriptors:",
          "  - key: open",
          "    rate_limit:",
          "      unlimited: true",
          "  - key: bare",
          "    rate_limit: {unit: minute}",
          "  - key: empty",
          "    descriptors:",
          "  - key: flags",
          "    value: v*",
          "    share_threshold: true",
          "    quota_mode: true",
          "    value_to_metric: true",
          "    detailed_metric: yes",
          "    metadata: {team: a, nested: {list: [1, 2]}}",
          "    rate_limit:",
          "      name: flagged",
          "      unit: Hour",
          "      requests_per_unit: 5",
          "      replaces:",
          "        - name: other",
          "  - key: stray",
          "    unit: minute",
          "    rate_limit: {unit: second, requests_per_unit: 1}", "")), FIXED);
      assertThat(c.warnings()).containsExactly("f.yaml:24: d.stray: 'unit' means nothing"
          + " here and is ignored, as envoyproxy/ratelimit ignores it");
      EnvoyHarness h = new EnvoyHarness(c, settings("fixed-window"));
      assertThat(Integer.toUnsignedLong(h.one("d", "open", "x").getLimitRemaining()))
          .isEqualTo(4294967295L);
      assertThat(h.one("d", "bare", "x"))
          .as("no requests_per_unit: 0, always over, as ratelimit reads it")
          .isEqualTo(status(Code.OVER_LIMIT, limit(0, Unit.MINUTE, ""), 0, 50));
      assertThat(h.one("d", "empty", "x")).isEqualTo(NO_LIMIT);
      assertThat(h.one("d", "flags", "v1").getCurrentLimit())
          .isEqualTo(limit(5, Unit.HOUR, "flagged"));
    }
  }

  /** integration_test.go: testBasicBaseConfig; fixed_cache_impl_test.go: TestRedis. */
  @Nested
  class FixedWindow {
    @Test
    void aCounterPerCalendarUnit_remainingCountsDown_overAnswersZero() throws Exception {
      EnvoyHarness h = fixed("shop.yaml");
      for (int i = 0; i < 15; i++) {
        DescriptorStatus s = h.one("shop", "client", "c1");
        boolean over = i >= 12;
        assertThat(s).as("hit %s", i + 1).isEqualTo(status(over ? Code.OVER_LIMIT : Code.OK,
            limit(12, Unit.MINUTE, ""), over ? 0 : 11 - i, 50));
      }
      h.wallMillis.addAndGet(49_999);
      assertThat(h.one("shop", "client", "c1").getDurationUntilReset().getSeconds())
          .as("still the same calendar minute").isEqualTo(1);
      h.wallMillis.addAndGet(1);
      assertThat(h.one("shop", "client", "c1"))
          .as("a new calendar minute: a new counter, though the limiter's clock never moved")
          .isEqualTo(status(Code.OK, limit(12, Unit.MINUTE, ""), 11, 60));
    }

    @Test
    void severalDescriptors_eachCharged_overallOverIfAnyIs() throws Exception {
      EnvoyHarness h = fixed("shop.yaml");
      for (int i = 0; i < 4; i++) {
        RateLimitResponse r = h.ask("shop", 1, descriptor("client", "c2"),
            descriptor("ip", "10.1.1.1"));
        boolean over = i >= 2;
        assertThat(r.getOverallCode()).isEqualTo(over ? Code.OVER_LIMIT : Code.OK);
        assertThat(r.getStatuses(0)).as("charged even while the other is over")
            .isEqualTo(status(Code.OK, limit(12, Unit.MINUTE, ""), 11 - i, 50));
        assertThat(r.getStatuses(1)).isEqualTo(status(over ? Code.OVER_LIMIT : Code.OK,
            limit(2, Unit.HOUR, ""), over ? 0 : 1 - i, 3590));
      }
    }

    @Test
    void hitsAddend_refusedHitsCount_andZeroIsACheck() throws Exception {
      EnvoyHarness h = fixed("shop.yaml");
      assertThat(h.ask("shop", 10, descriptor("client", "c3")).getStatuses(0)
          .getLimitRemaining()).isEqualTo(2);
      assertThat(h.ask("shop", 5, descriptor("client", "c3")).getStatuses(0).getCode())
          .isEqualTo(Code.OVER_LIMIT);
      assertThat(h.ask("shop", 1, descriptor("client", "c3")).getStatuses(0).getCode())
          .as("the refused 5 were counted, as ratelimit's INCRBY counts them")
          .isEqualTo(Code.OVER_LIMIT);
      RateLimitDescriptor check = descriptor("client", "c4").toBuilder()
          .setHitsAddend(UInt64Value.of(0)).build();
      h.ask("shop", 12, descriptor("client", "c4"));
      assertThat(h.ask("shop", 1, check).getStatuses(0))
          .as("a per-descriptor 0: a check; at the limit is not over it")
          .isEqualTo(status(Code.OK, limit(12, Unit.MINUTE, ""), 0, 50));
      h.one("shop", "client", "c4");
      assertThat(h.ask("shop", 1, check).getStatuses(0).getCode()).as("over it is")
          .isEqualTo(Code.OVER_LIMIT);
      RateLimitDescriptor huge = descriptor("client", "c5").toBuilder()
          .setHitsAddend(UInt64Value.of(-1L)).build();   // 2^64 - 1
      assertThat(h.ask("shop", 1, huge).getStatuses(0).getCode())
          .as("a uint64 at or above 2^63 is read unsigned: far over").isEqualTo(Code.OVER_LIMIT);
      RateLimitDescriptor own = descriptor("client", "c6").toBuilder()
          .setHitsAddend(UInt64Value.of(3)).build();
      assertThat(h.ask("shop", 7, own).getStatuses(0).getLimitRemaining())
          .as("the descriptor's hits_addend wins over the request's").isEqualTo(9);
      assertThat(h.ask("shop", 0, descriptor("client", "c6")).getStatuses(0)
          .getLimitRemaining()).as("the request's 0 counts 1").isEqualTo(8);
    }

    @Test
    void durationUntilReset_isTheCalendarUnitsEnd_forEveryUnit() {
      long now = 1_795_564_810L;   // 2026-11-25T00:00:10Z
      assertThat(EnvoyService.calendarReset(EnvoyConfig.Unit.SECOND, now).getSeconds())
          .isEqualTo(1);
      assertThat(EnvoyService.calendarReset(EnvoyConfig.Unit.MINUTE, now).getSeconds())
          .isEqualTo(50);
      assertThat(EnvoyService.calendarReset(EnvoyConfig.Unit.HOUR, now).getSeconds())
          .isEqualTo(3590);
      assertThat(EnvoyService.calendarReset(EnvoyConfig.Unit.DAY, now).getSeconds())
          .isEqualTo(86_390);
      assertThat(EnvoyService.calendarReset(EnvoyConfig.Unit.WEEK, now).getSeconds())
          .as("epoch weeks, as ratelimit's now %% 604800").isEqualTo(604_800 - now % 604_800);
      assertThat(EnvoyService.calendarReset(EnvoyConfig.Unit.MONTH, now).getSeconds())
          .isEqualTo(2_592_000 - now % 2_592_000);
      assertThat(EnvoyService.calendarReset(EnvoyConfig.Unit.YEAR, now).getSeconds())
          .isEqualTo(31_536_000 - now % 31_536_000);
    }
  }

  /** ratelimit_test.go: how statuses make the answer. */
  @Nested
  class Answers {
    @ParameterizedTest
    @ValueSource(strings = {"fixed-window", "leaky-bucket"})
    void unlimited_andNoLimit_andReplaces(String mode) throws Exception {
      EnvoyConfig c = parse(mode, "r.yaml", String.join("\n",
          "domain: r",
          "descriptors:",
          "  - key: general",
          "    rate_limit: {name: general, unit: minute, requests_per_unit: 1}",
          "  - key: vip",
          "    rate_limit:",
          "      unit: minute",
          "      requests_per_unit: 100",
          "      replaces: [{name: general}]",
          "  - key: free",
          "    rate_limit:",
          "      unlimited: true",
          "      replaces: [{name: general}]", ""));
      EnvoyHarness h = new EnvoyHarness(c, settings(mode));
      RateLimitResponse r = h.ask("r", 1, descriptor("general", "g"), descriptor("none", "n"),
          descriptor("free", "f"));
      assertThat(r.getOverallCode()).isEqualTo(Code.OK);
      assertThat(r.getStatusesList()).as("TestUnlimited, with general replaced").containsExactly(
          NO_LIMIT, NO_LIMIT, DescriptorStatus.newBuilder().setCode(Code.OK)
              .setLimitRemaining(-1).build());
      h.one("r", "general", "g");
      assertThat(h.one("r", "general", "g").getCode()).as("alone, general limits")
          .isEqualTo(Code.OVER_LIMIT);
      RateLimitResponse vip = h.ask("r", 1, descriptor("general", "g"), descriptor("vip", "v"));
      assertThat(vip.getOverallCode()).as("replaced by vip's limit").isEqualTo(Code.OK);
      assertThat(vip.getStatuses(0)).isEqualTo(NO_LIMIT);
      assertThat(vip.getStatuses(1).getLimitRemaining()).isEqualTo(99);
    }

    @ParameterizedTest
    @ValueSource(strings = {"fixed-window", "leaky-bucket"})
    void quotaMode_overOnlyWhenEveryQuotaDescriptorIs_andRateLimitsStillDecide(String mode)
        throws Exception {
      EnvoyConfig c = parse(mode, "q.yaml", String.join("\n",
          "domain: q",
          "descriptors:",
          "  - key: q1",
          "    quota_mode: true",
          "    rate_limit: {unit: minute, requests_per_unit: 1}",
          "  - key: q2",
          "    quota_mode: true",
          "    rate_limit: {unit: minute, requests_per_unit: 1}",
          "  - key: r",
          "    rate_limit: {unit: minute, requests_per_unit: 1}",
          "  - key: qs",
          "    quota_mode: true",
          "    shadow_mode: true",
          "    rate_limit: {unit: minute, requests_per_unit: 0}", ""));
      EnvoyHarness h = new EnvoyHarness(c, settings(mode));
      h.one("q", "q1", "a");
      RateLimitResponse some = h.ask("q", 1, descriptor("q1", "a"), descriptor("q2", "a"));
      assertThat(some.getStatuses(0).getCode()).isEqualTo(Code.OVER_LIMIT);
      assertThat(some.getOverallCode()).as("TestServiceQuotaModeOnlySomeOverTheLimit")
          .isEqualTo(Code.OK);
      RateLimitResponse all = h.ask("q", 1, descriptor("q1", "a"), descriptor("q2", "a"));
      assertThat(all.getOverallCode()).as("TestServiceQuotaModeOnlyAllOverTheLimit")
          .isEqualTo(Code.OVER_LIMIT);
      h.one("q", "r", "x");
      RateLimitResponse mixed = h.ask("q", 1, descriptor("q2", "b"), descriptor("r", "x"));
      assertThat(mixed.getOverallCode()).as("TestServiceMixedPerDescriptorModes")
          .isEqualTo(Code.OVER_LIMIT);
      RateLimitResponse shadowQuota = h.ask("q", 1, descriptor("qs", "x"));
      assertThat(shadowQuota.getOverallCode()).as("TestServiceQuotaModeWithShadowMode")
          .isEqualTo(Code.OK);
    }

    @ParameterizedTest
    @ValueSource(strings = {"fixed-window", "leaky-bucket"})
    void globalShadowMode_answersOk_butReportsEachDescriptor(String mode) throws Exception {
      EnvoyHarness h = EnvoyHarness.of(new EnvoyConfig.Settings(1_000_000_000L, mode, false),
          new EnvoyService.Settings(true, EnvoyService.Headers.NONE, true, mode,
              System::currentTimeMillis),
          "shop.yaml");
      h.ask("shop", 2, descriptor("ip", "1"));
      RateLimitResponse r = h.ask("shop", 1, descriptor("ip", "1"));
      assertThat(r.getOverallCode()).isEqualTo(Code.OK);
      assertThat(r.getStatuses(0).getCode()).as("TestServiceGlobalShadowMode")
          .isEqualTo(Code.OVER_LIMIT);
    }

    @Test
    void globalQuotaMode_overOnlyWhenEveryDescriptorIs() throws Exception {
      EnvoyHarness h = EnvoyHarness.of(FIXED, new EnvoyService.Settings(true,
          EnvoyService.Headers.NONE, false, "fixed-window", System::currentTimeMillis, false,
          true), "shop.yaml");
      h.ask("shop", 2, descriptor("ip", "q"));
      RateLimitResponse some = h.ask("shop", 1, descriptor("ip", "q"), descriptor("client", "q"));
      assertThat(some.getStatuses(0).getCode()).isEqualTo(Code.OVER_LIMIT);
      assertThat(some.getOverallCode()).as("TestServiceGlobalQuotaMode").isEqualTo(Code.OK);
      assertThat(h.ask("shop", 1, descriptor("ip", "q"), descriptor("none", "n"))
          .getOverallCode()).as("a descriptor without a limit counts, and never fails")
          .isEqualTo(Code.OK);
      assertThat(h.ask("shop", 1, descriptor("ip", "q")).getOverallCode()).as("all of one")
          .isEqualTo(Code.OVER_LIMIT);
    }

    @Test
    void dynamicMetadata_whenAsked_carriesTheMetadataOfThePassedDescriptors() throws Exception {
      EnvoyConfig c = EnvoyConfig.parse(Map.of("m.yaml", String.join("\n",
          "domain: m",
          "descriptors:",
          "  - key: a",
          "    metadata: {name: service_1, quota: {tier: gold}, weight: 2}",
          "    rate_limit: {unit: minute, requests_per_unit: 5}",
          "  - key: b",
          "    metadata: {name: service_2, quota: {region: eu}, extra: true}",
          "    rate_limit: {unit: minute, requests_per_unit: 0}",
          "  - key: c",
          "    metadata: {name: service_3, quota: {region: us}, more: [x, 1]}",
          "    rate_limit: {unit: minute, requests_per_unit: 5}", "")), FIXED);
      EnvoyHarness h = new EnvoyHarness(c, new EnvoyService.Settings(true,
          EnvoyService.Headers.NONE, false, "fixed-window", System::currentTimeMillis, true,
          false));
      RateLimitDescriptor overridden = descriptor("c", "3").toBuilder()
          .setHitsAddend(UInt64Value.of(2)).build();
      RateLimitResponse r = h.ask("m", 1, descriptor("a", "1"), descriptor("b", "2"),
          overridden);
      com.google.protobuf.Struct meta = r.getDynamicMetadata();
      assertThat(meta.getFieldsOrThrow("domain").getStringValue()).isEqualTo("m");
      assertThat(meta.getFieldsOrThrow("hitsAddend").getNumberValue()).isEqualTo(1);
      List<com.google.protobuf.Value> ds = meta.getFieldsOrThrow("descriptors").getListValue()
          .getValuesList();
      assertThat(ds).hasSize(3);
      assertThat(ds.get(0).getStructValue().getFieldsOrThrow("entries").getListValue()
          .getValues(0).getStringValue()).isEqualTo("a=1");
      assertThat(ds.get(2).getStructValue().getFieldsOrThrow("hitsAddend").getNumberValue())
          .isEqualTo(2);
      com.google.protobuf.Struct passed = meta.getFieldsOrThrow("metadata").getStructValue();
      assertThat(passed.getFieldsOrThrow("name").getStringValue())
          .as("TestOverlappingMetadataReturnsTheFirstValue").isEqualTo("service_1");
      assertThat(passed.getFieldsOrThrow("quota").getStructValue().getFieldsMap())
          .as("mappings merge").containsOnlyKeys("tier", "region");
      assertThat(passed.getFieldsOrThrow("quota").getStructValue().getFieldsOrThrow("region")
          .getStringValue()).as("b was over its limit: only c's metadata joins").isEqualTo("us");
      assertThat(passed.getFieldsMap()).containsKeys("weight", "more").doesNotContainKey("extra");
      assertThat(passed.getFieldsOrThrow("weight").getNumberValue()).isEqualTo(2);
      assertThat(EnvoyHarness.of(FIXED, settings("fixed-window"), "shop.yaml")
          .ask("shop", 1, descriptor("client", "x")).hasDynamicMetadata()).as("off by default")
          .isFalse();
    }

    @Test
    void ratelimitHeaders_fromTheDescriptorClosestToItsLimit() throws Exception {
      EnvoyHarness h = EnvoyHarness.of(FIXED, new EnvoyService.Settings(true,
          EnvoyService.Headers.RATELIMIT, false, "fixed-window", System::currentTimeMillis),
          "shop.yaml");
      RateLimitResponse ok = h.ask("shop", 1, descriptor("client", "h"), descriptor("ip", "h"),
          descriptor("none", "n"));
      assertThat(ok.getResponseHeadersToAddList()).containsExactly(
          header("RateLimit-Limit", "2"), header("RateLimit-Remaining", "1"),
          header("RateLimit-Reset", "3590"));
      h.one("shop", "client", "h2");
      RateLimitResponse over = h.ask("shop", 12, descriptor("ip", "h2"), descriptor("client", "h2"));
      assertThat(over.getResponseHeadersToAddList())
          .as("TestServiceWithCustomRatelimitHeaders: an over-limit descriptor wins")
          .containsExactly(header("RateLimit-Limit", "12"), header("RateLimit-Remaining", "0"),
              header("RateLimit-Reset", "50"));
      assertThat(EnvoyHarness.of(FIXED, settings("fixed-window"), "shop.yaml")
          .ask("shop", 1, descriptor("client", "h")).getResponseHeadersToAddList())
          .as("TestServiceWithDefaultRatelimitHeaders: none by default").isEmpty();
    }

    private HeaderValue header(String key, String value) {
      return HeaderValue.newBuilder().setKey(key).setValue(value).build();
    }

    @Test
    void emptyDomainOrNoDescriptors_isAnError_asInRatelimit() throws Exception {
      EnvoyHarness h = fixed("shop.yaml");
      assertThatThrownBy(() -> h.ask("", 1, descriptor("client", "x")))
          .isInstanceOf(StatusRuntimeException.class)
          .satisfies(e -> assertThat(((StatusRuntimeException) e).getStatus().getCode())
              .isEqualTo(Status.Code.INVALID_ARGUMENT))
          .hasMessageContaining("rate limit domain must not be empty");
      assertThatThrownBy(() -> h.ask("shop", 1))
          .hasMessageContaining("rate limit descriptor list must not be empty");
    }
  }

  /** The bypasses ratelimit does not have: no descriptor fails the whole call. */
  @Nested
  class NoBypass {
    @ParameterizedTest
    @ValueSource(strings = {"fixed-window", "leaky-bucket"})
    void aLongValue_isLimitedByItsDigest_andTheOthersAreStillDecided(String mode)
        throws Exception {
      EnvoyHarness h = in(mode, "shop.yaml");
      String longValue = "x".repeat(5_000);
      h.ask("shop", 2, descriptor("ip", "1.1.1.1"));
      RateLimitResponse r = h.ask("shop", 1, descriptor("ip", "1.1.1.1"),
          descriptor("ip", longValue), RateLimitDescriptor.getDefaultInstance(),
          descriptor("ip", "nul\u0000byte"));
      assertThat(r.getOverallCode()).as("the exhausted limit still answers")
          .isEqualTo(Code.OVER_LIMIT);
      assertThat(r.getStatuses(1).getLimitRemaining()).isEqualTo(1);
      assertThat(r.getStatuses(2)).isEqualTo(NO_LIMIT);
      assertThat(r.getStatuses(3).getLimitRemaining()).isEqualTo(1);
      assertThat(h.one("shop", "ip", longValue).getLimitRemaining())
          .as("the long value is counted like any other").isZero();
      assertThat(h.one("shop", "ip", longValue).getCode()).isEqualTo(Code.OVER_LIMIT);
      assertThat(h.one("shop", "ip", "x".repeat(4_999) + "y").getLimitRemaining())
          .as("a different long value: a different digest").isEqualTo(1);
      assertThat(EnvoyService.key("d", new String[] {"k"}, new String[] {longValue}, null))
          .matches("sha256:[0-9a-f]{64}");
      String atTheEdge = "e".repeat(1024 - "shop\u001fip=".length());
      assertThat(EnvoyService.key("shop", new String[] {"ip"}, new String[] {atTheEdge}, null))
          .as("exactly 1,024 bytes: kept as is").hasSize(1024);
      assertThat(h.one("shop", "ip", atTheEdge).getLimitRemaining())
          .as("and still limited when the window's number makes it longer").isEqualTo(1);
    }
  }

  /** A limiter that fails, at once or later: that descriptor is over, the call is answered. */
  @Test
  void aFailingDecision_isThatDescriptorOverLimit_neverAFailedCall() throws Exception {
    EnvoyConfig c = EnvoyConfig.parse(EnvoyHarness.texts("shop.yaml"), FIXED);
    RateLimiter broken = (RateLimiter) java.lang.reflect.Proxy.newProxyInstance(
        RateLimiter.class.getClassLoader(), new Class<?>[] {RateLimiter.class},
        (proxy, method, args) -> {
          if (method.getName().equals("close")) {
            return null;
          }
          if (String.valueOf(args[0]).contains("now")) {
            throw new IllegalStateException("broken at once");
          }
          return java.util.concurrent.CompletableFuture.failedFuture(
              new IllegalStateException("broken later"));
        });
    EnvoyService service = new EnvoyService(c, (name, limit) -> name.contains("client")
        ? broken : dev.sluice.Sluice.builder().limits(limit).build(), new Metrics(),
        1_000_000_000L, name -> null, settings("fixed-window"));
    RateLimitResponse r = EnvoyHarness.answer(service, io.envoyproxy.envoy.service.ratelimit.v3
        .RateLimitRequest.newBuilder().setDomain("shop").addDescriptors(descriptor("client", "now"))
        .addDescriptors(descriptor("client", "later")).addDescriptors(descriptor("ip", "1"))
        .build());
    assertThat(r.getOverallCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(r.getStatuses(0).getCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(r.getStatuses(1).getCode()).isEqualTo(Code.OVER_LIMIT);
    assertThat(r.getStatuses(2).getCode()).as("the others are decided").isEqualTo(Code.OK);
  }

  /** The default algorithm: the leaky bucket decides where the algorithm decides. */
  @Nested
  class LeakyDefault {
    @Test
    void sameLimits_sameShape_bucketAnswers() throws Exception {
      EnvoyHarness h = EnvoyHarness.of("shop.yaml");
      for (int i = 0; i < 12; i++) {
        assertThat(h.one("shop", "client", "l1"))
            .isEqualTo(DescriptorStatus.newBuilder().setCode(Code.OK)
                .setCurrentLimit(limit(12, Unit.MINUTE, "")).setLimitRemaining(11 - i)
                .setDurationUntilReset(com.google.protobuf.Duration.newBuilder()
                    .setSeconds(5L * (i + 1))).build());
      }
      assertThat(h.one("shop", "client", "l1").getCode()).isEqualTo(Code.OVER_LIMIT);
      h.clock.advance(Duration.ofSeconds(5));
      assertThat(h.one("shop", "client", "l1").getCode())
          .as("one leaks out every 5 s: no wait for the next calendar minute")
          .isEqualTo(Code.OK);
      RateLimitDescriptor check = descriptor("client", "l1").toBuilder()
          .setHitsAddend(UInt64Value.of(0)).build();
      assertThat(h.ask("shop", 1, check).getStatuses(0).getCode())
          .as("a check never finds a bucket over its capacity").isEqualTo(Code.OK);
      assertThat(h.ask("shop", 1, check).getStatuses(0).getLimitRemaining()).isZero();
      assertThat(h.ask("shop", 12, descriptor("client", "l2")).getStatuses(0)
          .getLimitRemaining()).isZero();
      assertThat(h.ask("shop", 5, descriptor("client", "l2")).getStatuses(0).getCode())
          .isEqualTo(Code.OVER_LIMIT);
      h.clock.advance(Duration.ofSeconds(5));
      assertThat(h.one("shop", "client", "l2").getCode())
          .as("unlike ratelimit's counter, a refused hit is not charged").isEqualTo(Code.OK);
    }
  }
}
