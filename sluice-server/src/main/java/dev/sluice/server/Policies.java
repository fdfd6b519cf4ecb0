package dev.sluice.server;

import dev.sluice.CircuitBreakerSettings;
import dev.sluice.Group;
import dev.sluice.Limit;
import dev.sluice.LimitSpec;
import dev.sluice.Specs;
import dev.sluice.StoreFailure;
import dev.sluice.concurrency.ConcurrencySpec;
import java.io.IOException;
import java.io.Reader;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
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
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/server.md#the-service">docs/server.md, "The service"</a>.
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
      if (!(t.getValueNode() instanceof MappingNode)) {
        problems.add(at(source, t.getValueNode()) + what + ": must be a mapping such as"
            + " {limit: 20, lease: 30s}");
        continue;
      }
      // the words of ConcurrencySpec, with each field's node, so a problem names its line
      Map<String, Node> nodes = new LinkedHashMap<>();
      Object fields = plain(t.getValueNode(), "", nodes);
      @SuppressWarnings("unchecked")
      Map<String, Object> settings = (Map<String, Object>) fields;
      ConcurrencySpec spec = ConcurrencySpec.parse(name, settings, field -> field,
          (field, message) -> problems.add(at(source, field == null ? t.getKeyNode()
              : nodes.getOrDefault(field, t.getValueNode())) + what + ": " + message));
      if (spec != null) {
        out.put(name, spec);
      }
    }
    return Collections.unmodifiableMap(out);
  }

  /**
   * A YAML node as ConcurrencySpec reads it: a scalar's text, a mapping as a map (a key given
   * twice keeps its first value), anything else as its text; each field's node by its path.
   */
  private static Object plain(Node node, String path, Map<String, Node> nodes) {
    if (node instanceof MappingNode m) {
      Map<String, Object> out = new LinkedHashMap<>();
      for (NodeTuple t : m.getValue()) {
        String k = String.valueOf(scalar(t.getKeyNode()));
        nodes.putIfAbsent(path + k, t.getValueNode());
        out.putIfAbsent(k, plain(t.getValueNode(), path + k + ".", nodes));
      }
      return out;
    }
    String text = scalar(node);
    return text == null ? node.getNodeId().name().toLowerCase(Locale.ROOT) : text;
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
          failure = Specs.storeFailure(f);
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
    return Specs.number(key, scalar(n), (field, message) ->
        problems.add(at(source, n) + what + ": " + message));
  }

  private static Duration duration(String source, String what, String key, Node n, List<String> problems) {
    return Specs.duration(key, scalar(n), (field, message) ->
        problems.add(at(source, n) + what + ": " + message));
  }

  /** {@code 250ms}, {@code 30s}, {@code 1.5m}, {@code 1h}, {@code 7d}; null if not one. */
  public static Duration parseDuration(String s) {
    return Specs.parseDuration(s);
  }

  private static String scalar(Node n) {
    return n instanceof ScalarNode s ? s.getValue() : null;
  }

  private static String at(String source, Node n) {
    return source + ":" + (n.getStartMark().getLine() + 1) + ": ";
  }
}
