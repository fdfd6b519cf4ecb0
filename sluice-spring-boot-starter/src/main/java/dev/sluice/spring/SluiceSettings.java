package dev.sluice.spring;

import dev.sluice.CircuitBreakerSettings;
import dev.sluice.Limit;
import dev.sluice.LimitSpec;
import dev.sluice.Specs;
import dev.sluice.StoreFailure;
import dev.sluice.http.MissingKey;
import dev.sluice.http.RateLimitHeaders;
import dev.sluice.internal.ClientAddress;
import dev.sluice.internal.RequestKeys;
import dev.sluice.internal.RuleChecks;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.BiFunction;
import java.util.regex.Pattern;

/**
 * {@link SluiceProperties} checked and turned into Sluice's model: every problem is collected,
 * named by its property, and thrown together as a {@link SluiceConfigurationException}.
 */
final class SluiceSettings {
  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9_.-]{1,64}");

  /** Where a rule's key comes from. */
  record KeySource(String kind, String header) {
    static final KeySource IP = new KeySource("ip", null);
  }

  /** A rule's cost: a constant, or the number a header holds (1 when the header is absent). */
  record CostSource(double constant, String header) {
    double of(String headerValue) {
      if (header == null) {
        return constant;
      }
      if (headerValue == null || headerValue.isBlank()) {
        return 1;
      }
      try {
        return Double.parseDouble(headerValue.trim());
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("header " + header + " must hold a number but held '"
            + headerValue + "'");
      }
    }
  }

  /** A checked rule. */
  record RuleSpec(String path, List<String> methods, String policy, KeySource key, CostSource cost,
      boolean queue) {}

  final Map<String, List<Limit>> policies;
  final List<RuleSpec> rules;
  final RateLimitHeaders.Mode headers;
  final MissingKey missingKey;
  final StoreFailure failure;
  final String storeType;
  final boolean dryRun;
  final CircuitBreakerSettings breaker;
  /** The health status while the store is down: DOWN, OUT_OF_SERVICE or UP. */
  final String healthWhenDown;
  /** {@code sluice.concurrency.*}, checked. */
  final ConcurrencySettings concurrency;

  private SluiceSettings(Map<String, List<Limit>> policies, List<RuleSpec> rules,
      RateLimitHeaders.Mode headers, MissingKey missingKey, StoreFailure failure, String storeType,
      boolean dryRun, CircuitBreakerSettings breaker, String healthWhenDown,
      ConcurrencySettings concurrency) {
    this.healthWhenDown = healthWhenDown;
    this.concurrency = concurrency;
    this.dryRun = dryRun;
    this.breaker = breaker;
    this.policies = policies;
    this.rules = rules;
    this.headers = headers;
    this.missingKey = missingKey;
    this.failure = failure;
    this.storeType = storeType;
  }

  /** The store types {@code sluice.store.type} takes. */
  static final List<String> STORE_TYPES = List.of("auto", "memory", "redis", "postgres", "mysql");

  /**
   * Checks the properties; {@code ticksPerSecond} is the resolution of the chosen store's clock
   * (0: not chosen yet, every limit is checked but for fitting a clock).
   *
   * @throws SluiceConfigurationException listing every problem
   */
  static SluiceSettings of(SluiceProperties p, long ticksPerSecond) {
    List<String> problems = new ArrayList<>();
    RateLimitHeaders.Mode headers = switch (lower(p.getHeaders())) {
      case "ietf" -> RateLimitHeaders.Mode.IETF;
      case "legacy" -> RateLimitHeaders.Mode.LEGACY;
      case "none" -> RateLimitHeaders.Mode.NONE;
      default -> {
        problems.add("sluice.headers: must be ietf, legacy or none but was '" + p.getHeaders() + "'");
        yield null;
      }
    };
    MissingKey missingKey = switch (lower(p.getMissingKey())) {
      case "reject" -> MissingKey.REJECT;
      case "allow" -> MissingKey.ALLOW;
      case "shared" -> MissingKey.SHARED;
      default -> {
        problems.add("sluice.missing-key: must be reject, allow or shared but was '"
            + p.getMissingKey() + "'");
        yield null;
      }
    };
    try {
      ClientAddress.trusting(p.getTrustedProxies(), p.getIpv6PrefixBits());
    } catch (IllegalArgumentException e) {
      problems.add((e.getMessage().startsWith("ipv6") ? "sluice.ipv6-prefix-bits: "
          : "sluice.trusted-proxies: ") + e.getMessage());
    }
    if (p.getMaximumKeys() < 1 || p.getMaximumKeys() > 1_000_000_000L) {
      problems.add("sluice.maximum-keys: must be from 1 to 1000000000 but was " + p.getMaximumKeys());
    }
    SluiceProperties.Store store = p.getStore();
    String storeType = lower(store.getType());
    if (!STORE_TYPES.contains(storeType)) {
      problems.add("sluice.store.type: must be auto, memory, redis, postgres or mysql but was '"
          + store.getType() + "'");
    }
    StoreFailure failure = Specs.storeFailure(store.getFailure());
    if (failure == null || failure == StoreFailure.LOCAL_SHARE) {
      problems.add("sluice.store.failure: must be closed, open or fallback but was '"
          + store.getFailure() + "'");
    }
    CircuitBreakerSettings breaker = breaker(store.getCircuitBreaker(), problems);
    Duration reconnect = store.getRedis().getReconnectDelayMax();
    if (reconnect == null || reconnect.toMillis() < 1 || reconnect.compareTo(Duration.ofMinutes(1)) > 0) {
      problems.add("sluice.store.redis.reconnect-delay-max: must be between 1ms and 1m but was "
          + reconnect);
    }
    Duration timeout = store.getTimeout();
    if (timeout == null || timeout.toMillis() < 1 || timeout.compareTo(Duration.ofMinutes(1)) > 0) {
      problems.add("sluice.store.timeout: must be between 1ms and 1m but was " + timeout);
    }

    Map<String, List<Limit>> policies = new LinkedHashMap<>();
    p.getPolicies().forEach((name, policy) -> {
      String at = "sluice.policies." + name;
      if (!NAME.matcher(name).matches()) {
        problems.add(at + ": a policy name must be 1 to 64 of A-Z a-z 0-9 _ . - but was '" + name
            + "'");
        return;
      }
      List<Limit> limits = policy(at, name, policy, ticksPerSecond, problems);
      if (limits != null) {
        policies.put(name, List.copyOf(limits));
      }
    });

    List<RuleSpec> rules = new ArrayList<>();
    for (int i = 0; i < p.getRules().size(); i++) {
      RuleSpec r = rule("sluice.rules[" + i + "]", p.getRules().get(i), p.getPolicies().keySet(),
          policies, problems);
      if (r != null) {
        rules.add(r);
      }
    }
    String healthWhenDown = switch (lower(store.getHealthWhenDown())) {
      case "auto" -> failure == StoreFailure.FAIL_OPEN || failure == StoreFailure.FALLBACK_IN_MEMORY
          ? "UP" : "DOWN";
      case "down" -> "DOWN";
      case "out-of-service" -> "OUT_OF_SERVICE";
      case "up" -> "UP";
      default -> {
        problems.add("sluice.store.health-when-down: must be auto, down, out-of-service or up but"
            + " was '" + store.getHealthWhenDown() + "'");
        yield null;
      }
    };
    ConcurrencySettings concurrency = ConcurrencySettings.of(p.getConcurrency(), problems);
    Duration refresh = p.getQuotas().getRefresh();
    if (refresh == null || refresh.compareTo(Duration.ofMillis(10)) < 0
        || refresh.compareTo(Duration.ofHours(1)) > 0) {
      problems.add("sluice.quotas.refresh: must be from 10ms to 1h but was " + refresh);
    }
    if (p.getQuotas().isWriteEnabled() && !p.getQuotas().isEnabled()) {
      problems.add("sluice.quotas.write-enabled: needs sluice.quotas.enabled=true");
    }
    if (!problems.isEmpty()) {
      throw new SluiceConfigurationException(problems);
    }
    return new SluiceSettings(Collections.unmodifiableMap(policies), List.copyOf(rules),
        headers, missingKey, failure, storeType, p.isDryRun(), breaker, healthWhenDown,
        concurrency);
  }

  /** Sluice's defaults with what is set applied, each checked and named when refused. */
  private static CircuitBreakerSettings breaker(SluiceProperties.CircuitBreaker c,
      List<String> problems) {
    CircuitBreakerSettings[] b = {CircuitBreakerSettings.defaults()};
    set(b, "failure-rate", c.getFailureRate(), CircuitBreakerSettings::withFailureRate, problems);
    set(b, "minimum-calls", c.getMinimumCalls(), CircuitBreakerSettings::withMinimumCalls, problems);
    set(b, "window", c.getWindow(), CircuitBreakerSettings::withWindow, problems);
    set(b, "consecutive-unavailable", c.getConsecutiveUnavailable(),
        CircuitBreakerSettings::withConsecutiveUnavailable, problems);
    set(b, "open-for", c.getOpenFor(), CircuitBreakerSettings::withOpenFor, problems);
    return b[0];
  }

  /** Applies one breaker property when it is set; a refused value is a problem named by it. */
  private static <T> void set(CircuitBreakerSettings[] b, String property, T value,
      BiFunction<CircuitBreakerSettings, T, CircuitBreakerSettings> with,
      List<String> problems) {
    if (value == null) {
      return;
    }
    try {
      b[0] = with.apply(b[0], value);
    } catch (IllegalArgumentException e) {
      problems.add("sluice.store.circuit-breaker." + property + ": " + e.getMessage());
    }
  }

  private static List<Limit> policy(String at, String name, SluiceProperties.Policy policy,
      long ticksPerSecond, List<String> problems) {
    Map<String, String> inline = policy.fields();
    List<SluiceProperties.LimitProperties> many = policy.getLimits();
    if (!many.isEmpty() && !inline.isEmpty()) {
      problems.add(at + ": has 'limits' and also " + String.join(", ", inline.keySet())
          + "; put every limit's settings under 'limits'");
      return null;
    }
    if (many.isEmpty() && inline.isEmpty()) {
      problems.add(at + ": has no limit (give algorithm, capacity and rate, or 'limits')");
      return null;
    }
    List<Limit> limits = new ArrayList<>();
    int before = problems.size();
    if (many.isEmpty()) {
      Limit l = LimitSpec.parse(inline, name, ticksPerSecond,
          (field, message) -> problems.add(at + (field == null ? "" : "." + field) + ": " + message));
      if (l != null) {
        limits.add(l);
      }
    } else {
      for (int i = 0; i < many.size(); i++) {
        String where = at + ".limits[" + i + "]";
        Limit l = LimitSpec.parse(many.get(i).fields(), many.size() == 1 ? name : name + "/" + (i + 1),
            ticksPerSecond,
            (field, message) -> problems.add(where + (field == null ? "" : "." + field) + ": " + message));
        if (l != null) {
          limits.add(l);
        }
      }
    }
    return problems.size() == before ? limits : null;
  }

  private static RuleSpec rule(String at, SluiceProperties.Rule r, Set<String> declared,
      Map<String, List<Limit>> policies, List<String> problems) {
    int before = problems.size();
    String path = r.getPath();
    checkPath(at, path, problems);
    List<String> methods = methods(at, r.getMethods(), problems);
    String policy = r.getPolicy();
    if (policy == null) {
      problems.add(at + ".policy: is missing (one of " + declared + ")");
    } else if (!declared.contains(policy)) {
      problems.add(at + ".policy: no policy '" + policy + "' under sluice.policies (there are "
          + declared + ")");
    }
    KeySource key = key(at + ".key", r.getKey(), problems);
    CostSource cost = cost(at + ".cost", r.getCost(), problems);
    boolean queue = r.isQueue();
    if (queue) {
      if (policy != null && policies.containsKey(policy)) {
        try {
          RuleChecks.checkQueueable(policies.get(policy), path);
        } catch (IllegalArgumentException e) {
          problems.add(at + ".queue: " + e.getMessage());
        }
      }
    }
    return problems.size() == before
        ? new RuleSpec(path, List.copyOf(methods), policy, key, cost, queue) : null;
  }

  /** A rule's path pattern, which starts with {@code /} (a problem under {@code at} if not). */
  static void checkPath(String at, String path, List<String> problems) {
    if (path == null || !path.startsWith("/")) {
      problems.add(at + ".path: a path pattern starts with '/' but was "
          + (path == null ? "missing" : "'" + path + "'"));
    }
  }

  /** A rule's HTTP methods, upper case (a problem under {@code at} for one that is not). */
  static List<String> methods(String at, List<String> given, List<String> problems) {
    try {
      return List.copyOf(RuleChecks.methods(given.toArray(new String[0])));
    } catch (IllegalArgumentException e) {
      problems.add(at + ".methods: " + e.getMessage());
      return List.of();
    }
  }

  /** {@code ip}, {@code principal} or {@code header:NAME}. */
  static KeySource key(String at, String text, List<String> problems) {
    String s = text == null ? "" : text.trim();
    if (s.equals("ip") || s.equals("principal")) {
      return new KeySource(s, null);
    }
    if (s.startsWith("header:")) {
      String name = s.substring("header:".length()).trim();
      try {
        return new KeySource("header", RequestKeys.headerName(name));
      } catch (IllegalArgumentException e) {
        problems.add(at + ": " + e.getMessage());
        return null;
      }
    }
    problems.add(at + ": must be ip, principal or header:NAME but was '" + text + "'");
    return null;
  }

  /** A number, or {@code header:NAME}. */
  static CostSource cost(String at, String text, List<String> problems) {
    String s = text == null ? "" : text.trim();
    if (s.startsWith("header:")) {
      String name = s.substring("header:".length()).trim();
      try {
        return new CostSource(0, RequestKeys.headerName(name));
      } catch (IllegalArgumentException e) {
        problems.add(at + ": " + e.getMessage());
        return null;
      }
    }
    try {
      double c = Double.parseDouble(s);
      if (Double.isFinite(c) && c > 0) {
        return new CostSource(c, null);
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    problems.add(at + ": must be a positive number or header:NAME but was '" + text + "'");
    return null;
  }

  private static String lower(String s) {
    return s == null ? "" : s.trim().toLowerCase(Locale.ROOT);
  }
}
