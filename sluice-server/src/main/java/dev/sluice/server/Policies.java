package dev.sluice.server;

import dev.sluice.CircuitBreakerSettings;
import dev.sluice.Group;
import dev.sluice.Limit;
import dev.sluice.LimitSpec;
import dev.sluice.StoreFailure;
import dev.sluice.concurrency.ConcurrencyGroup;
import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.concurrency.Priority;
import java.io.IOException;
import java.io.Reader;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;
import org.yaml.snakeyaml.error.MarkedYAMLException;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.ScalarNode;
import org.yaml.snakeyaml.nodes.SequenceNode;

/**
 * Named policies read from a YAML file, validated with messages that give the file, the line and
 * the problem:
 *
 * <pre>
 * policies:
 *   demo:                          # one limit, inline
 *     algorithm: leaky-bucket      # leaky-bucket | token-bucket | gcra | fixed-window | sliding-window
 *     capacity: 1                  # buckets: capacity; gcra: burst
 *     rate: 6/1m                   # amount/period: 10/s, 100/1m, 1.5/s, 5/250ms, 1000/30d
 *   api:                           # several limits: all must admit
 *     limits:
 *       - {algorithm: token-bucket, capacity: 10, rate: 10/s}
 *       - {algorithm: sliding-window, limit: 1000, window: 1h, penalty: 30s}
 *     maximumKeys: 50000           # optional: keys this policy holds in memory (default: --maximum-keys)
 *   tenants:                       # a group (hierarchical limit with borrowing, docs/semantics.md)
 *     group:
 *       parent:  {algorithm: leaky-bucket, capacity: 1000, rate: 1000/s}   # what the group admits
 *       assured: {algorithm: leaky-bucket, capacity: 100, rate: 100/s}     # each key, always
 *       ceiling: {algorithm: leaky-bucket, capacity: 1000, rate: 1000/s}   # each key, at most (or a list)
 *       reserve: 500               # optional: parent capacity only assured traffic fills (default: half)
 *       key: prefix                # all: one group (default) | prefix: the key up to the separator
 *       separator: "/"             # with key: prefix (default "/"): "acme/user-1" is in group "acme"
 * envoy:                           # optional: Envoy's rate limit service (--grpc-port), docs/envoy.md
 *   - domain: edge
 *     descriptors:
 *       - {key: remote_address, policy: api}                      # held to a policy of this file
 *       - {key: path, value: /login, rate_limit: {unit: minute, requests_per_unit: 5}}
 * store:                           # optional: settings of the shared store (--redis, --postgres)
 *   timeout: 250ms                 # the longest one decision may take
 *   failure: closed                # closed | open | fallback | local-share (with --leases)
 *   circuitBreaker: {failureRate: 0.5, minimumCalls: 20, window: 10s, consecutiveUnavailable: 3, openFor: 1s}
 * </pre>
 */
public final class Policies {
  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9_.-]{1,64}");
  private static final Set<String> LIMIT_KEYS = LimitSpec.FIELDS;

  private static final Set<String> BREAKER_KEYS =
      Set.of("failureRate", "minimumCalls", "window", "consecutiveUnavailable", "openFor");

  /**
   * The file's {@code store:} section; a field is null where the file says nothing.
   *
   * @param timeout the longest one decision may take
   * @param failure what requests get while the store fails
   * @param circuitBreaker when decisions stop calling the store
   */
  public record StoreSettings(Duration timeout, StoreFailure failure,
      CircuitBreakerSettings circuitBreaker) {
    static final StoreSettings NONE = new StoreSettings(null, null, null);
  }

  private static final Set<String> GROUP_KEYS =
      Set.of("parent", "assured", "ceiling", "reserve", "key", "separator");

  /**
   * A policy that is a group, and what makes two of them the same (the group function is a
   * lambda, so the file's words are compared).
   */
  public record GroupPolicy(Group group, String spec) {}

  private final Map<String, List<Limit>> policies;
  private final Map<String, Long> maximumKeys;
  private final Map<String, GroupPolicy> groups;
  private final StoreSettings store;

  private Policies(Map<String, List<Limit>> policies, Map<String, Long> maximumKeys,
      Map<String, GroupPolicy> groups, StoreSettings store) {
    this.policies = policies;
    this.maximumKeys = maximumKeys;
    this.groups = groups;
    this.store = store;
  }

  private EnvoyConfig envoy;

  /** The file's {@code envoy:} section (Envoy domains and descriptors), or null. */
  EnvoyConfig envoy() {
    return envoy;
  }

  /** The policy's group, or null if it is not a group. */
  public GroupPolicy group(String policy) {
    return groups.get(policy);
  }

  /** The policies, by name, in file order (a group's: assured, ceilings, parent). */
  public Map<String, List<Limit>> all() {
    return policies;
  }

  /** The policy's own {@code maximumKeys}, or null if it has none. */
  public Long maximumKeys(String policy) {
    return maximumKeys.get(policy);
  }

  /** The {@code store:} section. */
  public StoreSettings store() {
    return store;
  }

  /** Reads and validates a file for the in-memory store (nanosecond clock). */
  public static Policies load(Path file) throws ConfigException {
    return load(file, 1_000_000_000L);
  }

  /**
   * Reads and validates a file; every limit must fit a store whose clock ticks
   * {@code ticksPerSecond} times a second (1,000,000 for Redis and PostgreSQL).
   */
  public static Policies load(Path file, long ticksPerSecond) throws ConfigException {
    String text;
    try {
      text = Files.readString(file, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new ConfigException(List.of(file + ": cannot be read: " + e));
    }
    return parse(file.toString(), text, ticksPerSecond);
  }

  /** The YAML reader of configuration files: no duplicate keys, few aliases (no alias bombs). */
  /** Validates YAML text for the in-memory store; {@code source} names it in messages. */
  public static Policies parse(String source, String text) throws ConfigException {
    return parse(source, text, 1_000_000_000L);
  }

  /** Validates YAML text; {@code source} names it in messages. */
  public static Policies parse(String source, String text, long ticksPerSecond)
      throws ConfigException {
    List<String> problems = new ArrayList<>();
    Node root;
    try (Reader r = new StringReader(text)) {
      root = YamlLoader.yaml().compose(r);
    } catch (MarkedYAMLException e) {
      int line = e.getProblemMark() != null ? e.getProblemMark().getLine() + 1 : 1;
      throw new ConfigException(List.of(source + ":" + line + ": not valid YAML: " + e.getProblem()));
    } catch (IOException | RuntimeException e) {
      throw new ConfigException(List.of(source + ": not valid YAML: " + e.getMessage()));
    }
    if (!(root instanceof MappingNode top)) {
      throw new ConfigException(List.of(source + ":1: expected a mapping with a 'policies' key"));
    }
    Node policiesNode = null;
    Node envoyNode = null;
    Node concurrencyNode = null;
    StoreSettings store = StoreSettings.NONE;
    for (NodeTuple t : top.getValue()) {
      String k = scalar(t.getKeyNode());
      if ("policies".equals(k)) {
        policiesNode = t.getValueNode();
      } else if ("store".equals(k)) {
        store = store(source, t.getValueNode(), problems);
      } else if ("envoy".equals(k)) {
        envoyNode = t.getValueNode();
      } else if ("concurrency".equals(k)) {
        concurrencyNode = t.getValueNode();
      } else {
        problems.add(at(source, t.getKeyNode()) + "unknown key '" + k + "' (expected 'policies',"
            + " 'store', 'envoy' or 'concurrency')");
      }
    }
    Map<String, List<Limit>> out = new LinkedHashMap<>();
    Map<String, Long> keys = new LinkedHashMap<>();
    Map<String, GroupPolicy> groups = new LinkedHashMap<>();
    if (policiesNode == null) {
      problems.add(source + ":1: 'policies' is missing");
    } else if (!(policiesNode instanceof MappingNode pm) || pm.getValue().isEmpty()) {
      problems.add(at(source, policiesNode) + "'policies' must map policy names to their limits");
    } else {
      Set<String> seen = new HashSet<>();
      for (NodeTuple t : pm.getValue()) {
        String name = scalar(t.getKeyNode());
        if (name != null && !seen.add(name)) {
          problems.add(at(source, t.getKeyNode()) + "policy '" + name + "' is defined twice");
          continue;
        }
        if (name == null || !NAME.matcher(name).matches()) {
          problems.add(at(source, t.getKeyNode()) + "policy name must be 1 to 64 of A-Z a-z 0-9 _ . -"
              + " but was '" + name + "'");
          continue;
        }
        Node node = t.getValueNode();
        if (node instanceof MappingNode pmap) {
          // maximumKeys belongs to the policy, whichever form its limits take
          List<NodeTuple> rest = new ArrayList<>();
          for (NodeTuple f : pmap.getValue()) {
            if ("maximumKeys".equals(scalar(f.getKeyNode()))) {
              Long n = count(source, "policy '" + name + "'", "maximumKeys", f.getValueNode(),
                  1, 1_000_000_000L, problems);
              if (n != null) {
                keys.put(name, n);
              }
            } else {
              rest.add(f);
            }
          }
          node = new MappingNode(pmap.getTag(), true, rest, pmap.getStartMark(), pmap.getEndMark(),
              pmap.getFlowStyle());
        }
        Node groupNode = groupNode(node);
        if (groupNode != null) {
          if (((MappingNode) node).getValue().size() != 1) {
            problems.add(at(source, node) + "policy '" + name + "' has 'group' and other keys;"
                + " put the group's settings under 'group' (maximumKeys may stay beside it)");
            continue;
          }
          GroupPolicy g = group(source, name, groupNode, ticksPerSecond, problems);
          if (g != null) {
            groups.put(name, g);
            out.put(name, g.group().limits());
          }
          continue;
        }
        List<Limit> limits = policy(source, name, node, ticksPerSecond, problems);
        if (limits != null) {
          out.put(name, List.copyOf(limits));
        }
      }
    }
    EnvoyConfig envoy = envoyNode == null ? null
        : EnvoyConfig.section(source, envoyNode, ticksPerSecond, out.keySet(), problems);
    Map<String, ConcurrencySpec> concurrency = concurrencyNode == null ? Map.of()
        : concurrency(source, concurrencyNode, problems);
    if (!problems.isEmpty()) {
      throw new ConfigException(problems);
    }
    Policies p = new Policies(Collections.unmodifiableMap(out),
        Collections.unmodifiableMap(keys), Collections.unmodifiableMap(groups),
        store);
    p.envoy = envoy;
    p.concurrency = concurrency;
    return p;
  }

  private Map<String, ConcurrencySpec> concurrency = Map.of();

  /** The file's {@code concurrency:} section: named concurrency limits, in file order. */
  public Map<String, ConcurrencySpec> concurrency() {
    return concurrency;
  }

  /**
   * A concurrency limit of the file ({@code concurrency:}), served by {@code /v1/permits}.
   *
   * @param limit the most weight in flight per key
   * @param lease how long a permit lasts without a renewal
   * @param maxWaiters acquisitions that may wait per key
   * @param shares each priority's share of the permits (those given)
   * @param maximumKeys keys held at once
   * @param adaptive {@code none} (a fixed limit), {@code gradient} or {@code aimd}
   * @param minLimit an adaptive limit's floor
   * @param maxLimit an adaptive limit's ceiling
   * @param initialLimit an adaptive limit's start
   * @param codelTarget CoDel's target wait for each key's queue; null when CoDel is off
   * @param codelInterval CoDel's interval; null when CoDel is off
   * @param group the groups the keys are partitions of; null when none
   */
  public record ConcurrencySpec(int limit, Duration lease, int maxWaiters,
      Map<Priority, Double> shares, long maximumKeys, String adaptive, int minLimit,
      int maxLimit, int initialLimit, Duration codelTarget, Duration codelInterval,
      ConcurrencyGroup group) {}

  private static final Set<String> CONCURRENCY_KEYS = Set.of("limit", "lease", "maxWaiters",
      "shares", "maximumKeys", "adaptive", "minLimit", "maxLimit", "initialLimit", "codelTarget",
      "codelInterval", "group");
  private static final Set<String> CONCURRENCY_GROUP_KEYS = Set.of("limit", "assured",
      "assuredKeys", "reserve", "key", "separator");

  private static Map<String, ConcurrencySpec> concurrency(String source, Node node,
      List<String> problems) {
    if (!(node instanceof MappingNode m) || m.getValue().isEmpty()) {
      problems.add(at(source, node) + "'concurrency' must map limit names to their settings"
          + " (limit or adaptive, lease, maxWaiters, shares, maximumKeys)");
      return Map.of();
    }
    Map<String, ConcurrencySpec> out = new LinkedHashMap<>();
    for (NodeTuple t : m.getValue()) {
      String name = scalar(t.getKeyNode());
      String what = "concurrency '" + name + "'";
      if (name == null || !NAME.matcher(name).matches()) {
        problems.add(at(source, t.getKeyNode()) + "a concurrency limit's name must be 1 to 64 of"
            + " A-Z a-z 0-9 _ . - but was '" + name + "'");
        continue;
      }
      if (!(t.getValueNode() instanceof MappingNode settings)) {
        problems.add(at(source, t.getValueNode()) + what + ": must be a mapping such as"
            + " {limit: 20, lease: 30s}");
        continue;
      }
      int before = problems.size();
      double limit = Double.NaN;
      Duration lease = Duration.ofSeconds(30);
      double maxWaiters = ConcurrencyLimiter.DEFAULT_MAX_WAITERS;
      double maximumKeys = 100_000;
      Map<Priority, Double> shares = new EnumMap<>(Priority.class);
      String adaptive = "none";
      double minLimit = 1;
      double maxLimit = 1000;
      double initialLimit = 20;
      Duration codelTarget = null;
      Duration codelInterval = null;
      Node groupNode = null;
      for (NodeTuple f : settings.getValue()) {
        String k = scalar(f.getKeyNode());
        Node v = f.getValueNode();
        if (k == null || !CONCURRENCY_KEYS.contains(k)) {
          problems.add(at(source, f.getKeyNode()) + what + ": unknown key '" + k
              + "' (expected one of " + String.join(", ", new TreeSet<>(CONCURRENCY_KEYS)) + ")");
          continue;
        }
        switch (k) {
          case "limit" -> limit = whole(source, what, k, v, 1, Integer.MAX_VALUE, problems);
          case "maxWaiters" -> maxWaiters = whole(source, what, k, v, 0, 1_000_000, problems);
          case "maximumKeys" -> maximumKeys = whole(source, what, k, v, 1, 1_000_000_000,
              problems);
          case "minLimit" -> minLimit = whole(source, what, k, v, 1, 1_000_000, problems);
          case "maxLimit" -> maxLimit = whole(source, what, k, v, 1, 1_000_000, problems);
          case "initialLimit" -> initialLimit = whole(source, what, k, v, 1, 1_000_000, problems);
          case "adaptive" -> {
            String a = scalar(v);
            if (a == null || !Set.of("none", "gradient", "aimd").contains(a)) {
              problems.add(at(source, v) + what + ": 'adaptive' must be none, gradient or aimd"
                  + " but was '" + a + "'");
            } else {
              adaptive = a;
            }
          }
          case "lease" -> {
            Duration d = duration(source, what, k, v, problems);
            if (d != null && (d.toMillis() < 1 || d.compareTo(Duration.ofDays(1)) > 0)) {
              problems.add(at(source, v) + what + ": 'lease' must be between 1ms and 1d but was '"
                  + scalar(v) + "'");
            } else if (d != null) {
              lease = d;
            }
          }
          case "group" -> groupNode = v;
          case "codelTarget" -> codelTarget = duration(source, what, k, v, problems);
          case "codelInterval" -> codelInterval = duration(source, what, k, v, problems);
          default -> shares(source, what, v, shares, problems);
        }
      }
      if (problems.size() == before && (codelTarget == null) != (codelInterval == null)) {
        problems.add(at(source, t.getKeyNode()) + what + ": CoDel needs both 'codelTarget' and"
            + " 'codelInterval' (such as 5ms and 100ms)");
      } else if (codelTarget != null && codelInterval != null && (codelTarget.toNanos() <= 0
          || codelInterval.compareTo(codelTarget) < 0
          || codelInterval.compareTo(Duration.ofMinutes(1)) > 0)) {
        problems.add(at(source, t.getKeyNode()) + what + ": CoDel needs 0 < codelTarget <="
            + " codelInterval <= 1m but codelTarget was " + codelTarget + " and codelInterval "
            + codelInterval);
      }
      boolean fixed = settings.getValue().stream()
          .anyMatch(f -> "limit".equals(scalar(f.getKeyNode())));
      ConcurrencyGroup group = null;
      if (groupNode != null) {
        group = concurrencyGroup(source, what, groupNode, problems);
        if (!adaptive.equals("none")) {
          problems.add(at(source, groupNode) + what + ": adaptive limits and groups do not"
              + " combine yet (a group's keys share a fixed limit)");
        }
      }
      if (adaptive.equals("none") && !fixed && groupNode == null) {
        problems.add(at(source, t.getKeyNode()) + what + ": 'limit' is missing (the most"
            + " permits in flight per key, or adaptive: gradient)");
      } else if (!adaptive.equals("none") && fixed) {
        problems.add(at(source, t.getKeyNode()) + what + ": 'limit' and 'adaptive: " + adaptive
            + "' exclude each other (bound an adaptive limit with minLimit and maxLimit)");
      } else if (!adaptive.equals("none") && minLimit > maxLimit) {
        problems.add(at(source, t.getKeyNode()) + what + ": 'minLimit' (" + (long) minLimit
            + ") is above 'maxLimit' (" + (long) maxLimit + ")");
      }
      double above = 1;
      for (Priority p : Priority.values()) {
        double share = shares.getOrDefault(p, 1.0);
        if (share > above) {
          problems.add(at(source, settings) + what + ": the share of " + p.name().toLowerCase(
              Locale.ROOT) + " (" + share + ") is above a higher priority's (" + above + ")");
        }
        above = Math.min(above, share);
      }
      if (problems.size() == before) {
        out.put(name, new ConcurrencySpec(fixed ? (int) limit : 0, lease, (int) maxWaiters,
            Map.copyOf(shares), (long) maximumKeys, adaptive, (int) minLimit, (int) maxLimit,
            (int) initialLimit, codelTarget, codelInterval, group));
      }
    }
    return Collections.unmodifiableMap(out);
  }

  /** A whole number from {@code min} to {@code max}; NaN (and a problem) otherwise. */
  private static double whole(String source, String what, String key, Node v, long min, long max,
      List<String> problems) {
    double n = number(source, what, key, v, problems);
    if (Double.isNaN(n)) {
      return n;
    }
    if (n != Math.rint(n) || n < min || n > max) {
      problems.add(at(source, v) + what + ": '" + key + "' must be a whole number from " + min
          + " to " + max + " but was '" + scalar(v) + "'");
      return Double.NaN;
    }
    return n;
  }

  /** A concurrency limit's {@code group:}, checked; null (and problems) if it is not one. */
  private static ConcurrencyGroup concurrencyGroup(String source, String limitWhat, Node node,
      List<String> problems) {
    String what = limitWhat + " group";
    if (!(node instanceof MappingNode m)) {
      problems.add(at(source, node) + what + ": must be a mapping such as {limit: 100, assured:"
          + " 10, key: prefix}");
      return null;
    }
    int before = problems.size();
    double limit = Double.NaN;
    double assured = 0;
    double reserve = -1;
    String key = "all";
    String separator = null;
    Map<String, Node> assuredKeys = new LinkedHashMap<>();
    for (NodeTuple f : m.getValue()) {
      String k = scalar(f.getKeyNode());
      Node v = f.getValueNode();
      if (k == null || !CONCURRENCY_GROUP_KEYS.contains(k)) {
        problems.add(at(source, f.getKeyNode()) + what + ": unknown key '" + k
            + "' (expected one of " + String.join(", ", new TreeSet<>(CONCURRENCY_GROUP_KEYS))
            + ")");
        continue;
      }
      switch (k) {
        case "limit" -> limit = whole(source, what, k, v, 1, 1_000_000, problems);
        case "assured" -> assured = whole(source, what, k, v, 0, 1_000_000, problems);
        case "reserve" -> reserve = whole(source, what, k, v, 0, 1_000_000, problems);
        case "key" -> {
          key = scalar(v);
          if (!"all".equals(key) && !"prefix".equals(key)) {
            problems.add(at(source, v) + what + ": 'key' must be all or prefix but was '" + key
                + "'");
          }
        }
        case "separator" -> {
          separator = scalar(v);
          if (separator == null || separator.isEmpty()) {
            problems.add(at(source, v) + what + ": 'separator' must be a non-empty string");
          }
        }
        default -> {
          if (!(v instanceof MappingNode keys)) {
            problems.add(at(source, v) + what + ": 'assuredKeys' must map keys to their assured"
                + " shares");
          } else {
            keys.getValue().forEach(t -> assuredKeys.put(scalar(t.getKeyNode()), t.getValueNode()));
          }
        }
      }
    }
    if (separator != null && !"prefix".equals(key)) {
      problems.add(at(source, node) + what + ": 'separator' applies with key: prefix");
    }
    if (!m.getValue().stream().anyMatch(f -> "limit".equals(scalar(f.getKeyNode())))) {
      problems.add(at(source, node) + what + ": 'limit' is missing (the permits in flight the"
          + " group's keys hold at most, together)");
    }
    if (problems.size() != before) {
      return null;
    }
    long max = (long) limit;
    Map<String, Integer> named = new LinkedHashMap<>();
    assuredKeys.forEach((k, v) -> {
      double a = whole(source, what, "assuredKeys." + k, v, 0, max, problems);
      if (!Double.isNaN(a)) {
        named.put(k, (int) a);
      }
    });
    if (assured > limit) {
      problems.add(at(source, node) + what + ": 'assured' (" + (long) assured + ") is above its"
          + " 'limit' (" + max + ")");
    }
    if (reserve > limit) {
      problems.add(at(source, node) + what + ": 'reserve' (" + (long) reserve + ") is above its"
          + " 'limit' (" + max + ")");
    }
    if (problems.size() != before) {
      return null;
    }
    int everyKey = (int) assured;
    Map<String, Integer> shares = Map.copyOf(named);
    ConcurrencyGroup g = ConcurrencyGroup.sharing((int) limit)
        .assured(k -> shares.getOrDefault(k, everyKey));
    if (reserve >= 0) {
      g = g.reserve((int) reserve);
    }
    return "prefix".equals(key) ? g.byPrefix(separator == null ? "/" : separator) : g;
  }

  private static void shares(String source, String what, Node node, Map<Priority, Double> shares,
      List<String> problems) {
    if (!(node instanceof MappingNode m)) {
      problems.add(at(source, node) + what + ": 'shares' must map critical, normal or sheddable"
          + " to a share from 0 to 1");
      return;
    }
    for (NodeTuple t : m.getValue()) {
      String k = scalar(t.getKeyNode());
      Priority p = k == null ? null : switch (k) {
        case "critical" -> Priority.CRITICAL;
        case "normal" -> Priority.NORMAL;
        case "sheddable" -> Priority.SHEDDABLE;
        default -> null;
      };
      if (p == null) {
        problems.add(at(source, t.getKeyNode()) + what + ": unknown priority '" + k
            + "' (expected critical, normal or sheddable)");
        continue;
      }
      double share = number(source, what, k, t.getValueNode(), problems);
      if (!Double.isNaN(share) && !(share >= 0 && share <= 1)) {
        problems.add(at(source, t.getValueNode()) + what + ": the share of " + k + " must be"
            + " between 0 and 1 but was '" + scalar(t.getValueNode()) + "'");
      } else if (!Double.isNaN(share)) {
        shares.put(p, share);
      }
    }
  }

  private static Node groupNode(Node policy) {
    if (policy instanceof MappingNode m) {
      for (NodeTuple t : m.getValue()) {
        if ("group".equals(scalar(t.getKeyNode()))) {
          return t.getValueNode();
        }
      }
    }
    return null;
  }

  private static GroupPolicy group(String source, String name, Node node, long ticksPerSecond,
      List<String> problems) {
    String what = "policy '" + name + "' group";
    if (!(node instanceof MappingNode m)) {
      problems.add(at(source, node) + what + " must be a mapping (" + String.join(", ",
          new TreeSet<>(GROUP_KEYS)) + ")");
      return null;
    }
    int before = problems.size();
    Map<String, Node> f = new LinkedHashMap<>();
    for (NodeTuple t : m.getValue()) {
      String k = scalar(t.getKeyNode());
      if (k == null || !GROUP_KEYS.contains(k)) {
        problems.add(at(source, t.getKeyNode()) + what + ": unknown key '" + k + "' (expected one of "
            + String.join(", ", new TreeSet<>(GROUP_KEYS)) + ")");
      } else {
        f.put(k, t.getValueNode());
      }
    }
    for (String needed : new String[] {"parent", "assured"}) {
      if (!f.containsKey(needed)) {
        problems.add(at(source, m) + what + ": '" + needed + "' is missing");
      }
    }
    if (!f.containsKey("parent") || !f.containsKey("assured")) {
      return null;
    }
    Limit parent = groupLimit(source, what + " parent", name + "/parent", f.get("parent"),
        ticksPerSecond, problems);
    Limit assured = groupLimit(source, what + " assured", name + "/assured", f.get("assured"),
        ticksPerSecond, problems);
    List<Limit> ceilings = new ArrayList<>();
    Node c = f.get("ceiling");
    if (c instanceof SequenceNode seq) {
      int i = 1;
      for (Node n : seq.getValue()) {
        Limit l = groupLimit(source, what + " ceiling " + i, name + "/ceiling/" + i, n,
            ticksPerSecond, problems);
        if (l != null) {
          ceilings.add(l);
        }
        i++;
      }
    } else if (c != null) {
      Limit l = groupLimit(source, what + " ceiling", name + "/ceiling", c, ticksPerSecond,
          problems);
      if (l != null) {
        ceilings.add(l);
      }
    }
    String key = f.containsKey("key") ? scalar(f.get("key")) : "all";
    if (!"all".equals(key) && !"prefix".equals(key)) {
      problems.add(at(source, f.get("key")) + what + ": 'key' must be all or prefix but was '"
          + key + "'");
    }
    String separator = f.containsKey("separator") ? scalar(f.get("separator")) : "/";
    if (separator == null || separator.isEmpty() || separator.length() > 8) {
      problems.add(at(source, f.get("separator")) + what + ": 'separator' must be 1 to 8"
          + " characters but was '" + separator + "'");
    } else if (f.containsKey("separator") && !"prefix".equals(key)) {
      problems.add(at(source, f.get("separator")) + what + ": 'separator' applies with key: prefix");
    }
    double reserve = Double.NaN;
    if (f.containsKey("reserve")) {
      reserve = number(source, what, "reserve", f.get("reserve"), problems);
    }
    if (problems.size() > before) {
      return null;
    }
    Group g;
    Node at = f.get("parent");
    try {
      g = Group.sharing(parent);
      at = f.get("assured");
      g = g.assured(assured);
      if (!ceilings.isEmpty()) {
        at = f.get("ceiling");
        g = g.ceiling(ceilings.toArray(new Limit[0]));
      }
      if (!Double.isNaN(reserve)) {
        at = f.get("reserve");
        g = g.reserve(reserve);
      }
    } catch (IllegalArgumentException e) {
      problems.add(at(source, at) + what + ": " + e.getMessage());
      return null;
    }
    if ("prefix".equals(key)) {
      String sep = separator;
      g = g.by(k -> {
        int i = k.indexOf(sep);
        if (i <= 0) {
          throw new IllegalArgumentException("key must start with its group and '" + sep
              + "' (policy " + name + " groups keys by prefix)");
        }
        return k.substring(0, i);
      });
    }
    return new GroupPolicy(g, g + " key " + key + ("prefix".equals(key) ? " " + separator : ""));
  }

  private static Limit groupLimit(String source, String what, String defaultName, Node n,
      long ticksPerSecond, List<String> problems) {
    if (!(n instanceof MappingNode lm)) {
      problems.add(at(source, n) + what + " must be a mapping (algorithm, capacity, rate)");
      return null;
    }
    return limit(source, what, defaultName, lm, ticksPerSecond, problems);
  }

  private static StoreSettings store(String source, Node node, List<String> problems) {
    if (!(node instanceof MappingNode m)) {
      problems.add(at(source, node) + "'store' must be a mapping (timeout, failure, circuitBreaker)");
      return StoreSettings.NONE;
    }
    Duration timeout = null;
    StoreFailure failure = null;
    CircuitBreakerSettings breaker = null;
    for (NodeTuple t : m.getValue()) {
      String k = scalar(t.getKeyNode());
      Node v = t.getValueNode();
      switch (k == null ? "" : k) {
        case "timeout" -> {
          timeout = duration(source, "store", "timeout", v, problems);
          if (timeout != null && (timeout.toMillis() < 1 || timeout.compareTo(Duration.ofMinutes(1)) > 0)) {
            problems.add(at(source, v) + "store: 'timeout' must be between 1ms and 1m but was '"
                + scalar(v) + "'");
            timeout = null;
          }
        }
        case "failure" -> {
          String f = scalar(v);
          failure = LimitSpec.storeFailure(f);
          if (failure == null) {
            problems.add(at(source, v) + "store: 'failure' must be closed, open, fallback or local-share but was '"
                + f + "'");
          }
        }
        case "circuitBreaker" -> breaker = breaker(source, v, problems);
        default -> problems.add(at(source, t.getKeyNode()) + "store: unknown key '" + k
            + "' (expected timeout, failure, circuitBreaker)");
      }
    }
    return new StoreSettings(timeout, failure, breaker);
  }

  private static CircuitBreakerSettings breaker(String source, Node node, List<String> problems) {
    if (!(node instanceof MappingNode m)) {
      problems.add(at(source, node) + "store: 'circuitBreaker' must be a mapping (" + String.join(", ",
          new TreeSet<>(BREAKER_KEYS)) + ")");
      return null;
    }
    CircuitBreakerSettings b = CircuitBreakerSettings.defaults();
    String what = "store.circuitBreaker";
    for (NodeTuple t : m.getValue()) {
      String k = scalar(t.getKeyNode());
      Node v = t.getValueNode();
      if (k == null || !BREAKER_KEYS.contains(k)) {
        problems.add(at(source, t.getKeyNode()) + what + ": unknown key '" + k + "' (expected one of "
            + String.join(", ", new TreeSet<>(BREAKER_KEYS)) + ")");
        continue;
      }
      try {
        switch (k) {
          case "failureRate" -> {
            double r = number(source, what, k, v, problems);
            if (!Double.isNaN(r)) {
              b = b.withFailureRate(r);
            }
          }
          case "minimumCalls" -> {
            Long n = count(source, what, k, v, 1, 1_000_000, problems);
            if (n != null) {
              b = b.withMinimumCalls(n.intValue());
            }
          }
          case "consecutiveUnavailable" -> {
            Long n = count(source, what, k, v, 1, 1_000_000, problems);
            if (n != null) {
              b = b.withConsecutiveUnavailable(n.intValue());
            }
          }
          case "window" -> {
            Duration d = duration(source, what, k, v, problems);
            if (d != null) {
              b = b.withWindow(d);
            }
          }
          default -> {
            Duration d = duration(source, what, k, v, problems);
            if (d != null) {
              b = b.withOpenFor(d);
            }
          }
        }
      } catch (IllegalArgumentException e) {
        problems.add(at(source, v) + what + ": " + e.getMessage());
      }
    }
    return b;
  }

  private static Long count(String source, String what, String key, Node n, long min, long max,
      List<String> problems) {
    String text = scalar(n);
    try {
      long v = Long.parseLong(text == null ? "" : text.trim().replace("_", ""));
      if (v >= min && v <= max) {
        return v;
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    problems.add(at(source, n) + what + ": '" + key + "' must be a whole number from " + min
        + " to " + max + " but was '" + text + "'");
    return null;
  }

  private static List<Limit> policy(String source, String name, Node node, long ticksPerSecond,
      List<String> problems) {
    if (!(node instanceof MappingNode m)) {
      problems.add(at(source, node) + "policy '" + name + "' must be a mapping");
      return null;
    }
    Node limitsNode = null;
    for (NodeTuple t : m.getValue()) {
      if ("limits".equals(scalar(t.getKeyNode()))) {
        limitsNode = t.getValueNode();
      }
    }
    List<Limit> limits = new ArrayList<>();
    if (limitsNode == null) {
      int before = problems.size();
      Limit l = limit(source, "policy '" + name + "'", name, m, ticksPerSecond, problems);
      if (l != null) {
        limits.add(l);
      }
      return problems.size() == before ? limits : null;
    }
    if (m.getValue().size() != 1) {
      problems.add(at(source, node) + "policy '" + name + "' has 'limits' and other keys; put"
          + " every limit's settings under 'limits'");
      return null;
    }
    if (!(limitsNode instanceof SequenceNode seq) || seq.getValue().isEmpty()) {
      problems.add(at(source, limitsNode) + "policy '" + name + "': 'limits' must be a non-empty list");
      return null;
    }
    int before = problems.size();
    int i = 1;
    for (Node n : seq.getValue()) {
      String what = "policy '" + name + "' limit " + i;
      if (!(n instanceof MappingNode lm)) {
        problems.add(at(source, n) + what + " must be a mapping");
      } else {
        Limit l = limit(source, what, seq.getValue().size() == 1 ? name : name + "/" + i, lm,
            ticksPerSecond, problems);
        if (l != null) {
          limits.add(l);
        }
      }
      i++;
    }
    return problems.size() == before ? limits : null;
  }

  private static Limit limit(String source, String what, String defaultName, MappingNode m,
      long ticksPerSecond, List<String> problems) {
    Map<String, Node> f = new LinkedHashMap<>();
    int before = problems.size();
    for (NodeTuple t : m.getValue()) {
      String k = scalar(t.getKeyNode());
      if (f.containsKey(k)) {
        problems.add(at(source, t.getKeyNode()) + what + ": '" + k + "' is given twice");
      } else if (!LIMIT_KEYS.contains(k)) {
        problems.add(at(source, t.getKeyNode()) + what + ": unknown key '" + k + "' (expected one of"
            + " algorithm, capacity, rate, limit, window, penalty, name, maximumKeys)");
      } else if (!(t.getValueNode() instanceof ScalarNode)) {
        problems.add(at(source, t.getValueNode()) + what + ": '" + k + "' must be a single value");
      } else {
        f.put(k, t.getValueNode());
      }
    }
    if (problems.size() > before) {
      return null;
    }
    Map<String, String> fields = new LinkedHashMap<>();
    f.forEach((k, v) -> fields.put(k, scalar(v)));
    return LimitSpec.parse(fields, defaultName, ticksPerSecond, (field, message) ->
        problems.add(at(source, field == null ? m : f.get(field)) + what + ": " + message));
  }

  private static double number(String source, String what, String key, Node n, List<String> problems) {
    return LimitSpec.number(key, scalar(n), (field, message) ->
        problems.add(at(source, n) + what + ": " + message));
  }

  private static Duration duration(String source, String what, String key, Node n, List<String> problems) {
    return LimitSpec.duration(key, scalar(n), (field, message) ->
        problems.add(at(source, n) + what + ": " + message));
  }

  /** {@code 250ms}, {@code 30s}, {@code 1.5m}, {@code 1h}, {@code 7d}; null if not one. */
  public static Duration parseDuration(String s) {
    return LimitSpec.parseDuration(s);
  }

  private static String scalar(Node n) {
    return n instanceof ScalarNode s ? s.getValue() : null;
  }

  private static String at(String source, Node n) {
    return source + ":" + (n.getStartMark().getLine() + 1) + ": ";
  }
}
