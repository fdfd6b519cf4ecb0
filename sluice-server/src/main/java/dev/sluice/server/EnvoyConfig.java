package dev.sluice.server;

import dev.sluice.Limit;
import dev.sluice.LimitSpec;
import dev.sluice.Rate;
import java.io.IOException;
import java.io.Reader;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import org.yaml.snakeyaml.error.MarkedYAMLException;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.ScalarNode;
import org.yaml.snakeyaml.nodes.SequenceNode;

/**
 * Envoy rate limit configuration in envoyproxy/ratelimit's own format, loaded as is: one file
 * per domain, a tree of descriptors ({@code key}, optional {@code value}, optional
 * {@code rate_limit: {unit, requests_per_unit, name}}, {@code unlimited}, {@code shadow_mode},
 * {@code detailed_metric}, nested {@code descriptors}).
 *
 * <p>Each {@code rate_limit} becomes a Sluice limit with the same long-run rate: by default a
 * leaky bucket of {@code requests_per_unit} per unit whose capacity is one unit's worth; the
 * optional extension {@code sluice: {algorithm: ..., capacity: ...}} picks another algorithm or
 * burst (a fixed window keeps envoyproxy/ratelimit's own behaviour).
 *
 * <p>Matching, as envoyproxy/ratelimit does it: each entry of a request's descriptor, in order,
 * descends to the child whose key and value equal it, else to a child with that key and a value
 * ending in {@code *} whose prefix it starts with, else to the child with that key and no value
 * (any value: each value gets its own bucket). The limit is that of the node the last entry
 * reaches; a descriptor that leaves the tree, or ends on a node without a limit, has none.
 */
final class EnvoyConfig {
  private static final Set<String> NODE_KEYS = Set.of("key", "value", "rate_limit", "unlimited",
      "shadow_mode", "detailed_metric", "descriptors", "sluice", "policy");
  private static final Set<String> LIMIT_KEYS = Set.of("unit", "requests_per_unit", "name",
      "replaces");

  /** Envoy's units, as {@code RateLimitResponse.RateLimit.Unit} names them, and their lengths. */
  enum Unit {
    SECOND(Duration.ofSeconds(1)), MINUTE(Duration.ofMinutes(1)), HOUR(Duration.ofHours(1)),
    DAY(Duration.ofDays(1)), WEEK(Duration.ofDays(7)), MONTH(Duration.ofDays(30)),
    YEAR(Duration.ofDays(365));

    final Duration length;

    Unit(Duration length) {
      this.length = length;
    }
  }

  /** One descriptor node. {@code limit} is null without a {@code rate_limit}. */
  static final class Node {
    final String key;
    final String value;
    final Limit limit;
    final Unit unit;
    final long requestsPerUnit;
    final boolean unlimited;
    final boolean shadow;
    final boolean detailed;
    /** The Sluice algorithm of its limits (the {@code sluice:} extension; default leaky-bucket). */
    String algorithm = "leaky-bucket";
    /** Whether a request's per-descriptor {@code limit} override applies here. */
    boolean overrides;
    /** The Sluice policy this node is held to (in Sluice's policies file), or null. */
    String policy;
    /** This node's path from the domain, for names and metrics: {@code key=value.key}. */
    final String path;
    final Map<String, Node> exact = new LinkedHashMap<>();
    final List<Node> prefixed = new ArrayList<>();
    final Map<String, Node> anyValue = new LinkedHashMap<>();

    Node(String key, String value, Limit limit, Unit unit, long requestsPerUnit,
        boolean unlimited, boolean shadow, boolean detailed, String path) {
      this.key = key;
      this.value = value;
      this.limit = limit;
      this.unit = unit;
      this.requestsPerUnit = requestsPerUnit;
      this.unlimited = unlimited;
      this.shadow = shadow;
      this.detailed = detailed;
      this.path = path;
    }

    /** Whether this node limits (has a rate limit and is not unlimited). */
    boolean limits() {
      return limit != null && !unlimited;
    }

    void add(Node child) {
      if (child.value == null) {
        anyValue.put(child.key, child);
      } else if (child.value.endsWith("*")) {
        prefixed.add(child);
      } else {
        exact.put(child.key + "=" + child.value, child);
      }
    }

    Node child(String key, String value) {
      Node n = exact.get(key + "=" + value);
      if (n != null) {
        return n;
      }
      for (Node p : prefixed) {
        if (p.key.equals(key) && value.startsWith(p.value.substring(0, p.value.length() - 1))) {
          return p;
        }
      }
      return anyValue.get(key);
    }
  }

  private final Map<String, Node> domains;

  private EnvoyConfig(Map<String, Node> domains) {
    this.domains = domains;
  }

  /** No domain at all. */
  static EnvoyConfig none() {
    return new EnvoyConfig(Map.of());
  }

  /** The domains, each a root node whose children are its descriptors. */
  Map<String, Node> domains() {
    return domains;
  }

  /** The node a descriptor's entries reach in {@code domain}, or null. */
  Node match(String domain, List<String[]> entries) {
    Node n = domains.get(domain);
    if (n == null || entries.isEmpty()) {
      return null;
    }
    for (String[] e : entries) {
      n = n.child(e[0], e[1]);
      if (n == null) {
        return null;
      }
    }
    return n;
  }

  /** Every node with a limit, for building limiters. */
  List<Node> limited() {
    List<Node> out = new ArrayList<>();
    for (Node d : domains.values()) {
      collect(d, out);
    }
    return out;
  }

  private static void collect(Node n, List<Node> out) {
    if (n.limits()) {
      out.add(n);
    }
    for (Node c : n.exact.values()) {
      collect(c, out);
    }
    for (Node c : n.prefixed) {
      collect(c, out);
    }
    for (Node c : n.anyValue.values()) {
      collect(c, out);
    }
  }

  /**
   * Loads a file, or every {@code .yaml}/{@code .yml} file of a directory (as envoyproxy/ratelimit
   * reads its runtime directory), checking limits against a clock of {@code ticksPerSecond}.
   */
  static EnvoyConfig load(Path path, long ticksPerSecond) throws ConfigException {
    List<Path> files = new ArrayList<>();
    if (Files.isDirectory(path)) {
      try (Stream<Path> s = Files.list(path)) {
        s.filter(p -> p.getFileName().toString().matches("(?i).*\\.ya?ml")).sorted()
            .forEach(files::add);
      } catch (IOException e) {
        throw new ConfigException(List.of(path + ": cannot be read: " + e));
      }
    } else {
      files.add(path);
    }
    Map<String, String> texts = new LinkedHashMap<>();
    for (Path f : files) {
      try {
        texts.put(f.toString(), Files.readString(f, StandardCharsets.UTF_8));
      } catch (IOException e) {
        throw new ConfigException(List.of(f + ": cannot be read: " + e));
      }
    }
    return parse(texts, ticksPerSecond);
  }

  /** Validates YAML texts by source name; every problem is reported as {@code source:line}. */
  static EnvoyConfig parse(Map<String, String> texts, long ticksPerSecond) throws ConfigException {
    List<String> problems = new ArrayList<>();
    Map<String, Node> domains = new LinkedHashMap<>();
    for (Map.Entry<String, String> t : texts.entrySet()) {
      domain(t.getKey(), t.getValue(), ticksPerSecond, domains, problems);
    }
    if (!problems.isEmpty()) {
      throw new ConfigException(problems);
    }
    return new EnvoyConfig(domains);
  }

  private static void domain(String source, String text, long ticksPerSecond,
      Map<String, Node> domains, List<String> problems) {
    org.yaml.snakeyaml.nodes.Node yaml;
    try (Reader r = new StringReader(text)) {
      yaml = Policies.yaml().compose(r);
    } catch (MarkedYAMLException e) {
      int line = e.getProblemMark() != null ? e.getProblemMark().getLine() + 1 : 1;
      problems.add(source + ":" + line + ": not valid YAML: " + e.getProblem());
      return;
    } catch (IOException | RuntimeException e) {
      problems.add(source + ": not valid YAML: " + e.getMessage());
      return;
    }
    if (!(yaml instanceof MappingNode top)) {
      problems.add(source + ":1: expected a mapping with 'domain' and 'descriptors'");
      return;
    }
    domain(source, top, ticksPerSecond, domains, problems, null);
  }

  /**
   * The {@code envoy:} section of Sluice's policies file: a list of domains in Envoy's format
   * whose descriptors may also say {@code policy: <name>} to be held to one of the file's
   * policies (several limits, groups: anything a policy is). Problems go to {@code problems}.
   */
  static EnvoyConfig section(String source, org.yaml.snakeyaml.nodes.Node list,
      long ticksPerSecond, Set<String> policies, List<String> problems) {
    Map<String, Node> domains = new LinkedHashMap<>();
    if (!(list instanceof SequenceNode seq)) {
      problems.add(at(source, list) + "'envoy' must be a list of domains ({domain, descriptors})");
      return new EnvoyConfig(domains);
    }
    for (org.yaml.snakeyaml.nodes.Node item : seq.getValue()) {
      if (!(item instanceof MappingNode m)) {
        problems.add(at(source, item) + "an 'envoy' domain must be a mapping (domain, descriptors)");
      } else {
        domain(source, m, ticksPerSecond, domains, problems, policies);
      }
    }
    return new EnvoyConfig(domains);
  }

  /**
   * Both configurations' domains; null if both are.
   *
   * @throws ConfigException if a domain is in both
   */
  static EnvoyConfig merge(EnvoyConfig a, EnvoyConfig b) throws ConfigException {
    if (a == null || b == null) {
      return a == null ? b : a;
    }
    Map<String, Node> all = new LinkedHashMap<>(a.domains);
    for (Map.Entry<String, Node> e : b.domains.entrySet()) {
      if (all.putIfAbsent(e.getKey(), e.getValue()) != null) {
        throw new ConfigException(List.of("domain '" + e.getKey() + "' is in both the Envoy"
            + " configuration (--envoy-config) and the policies file's 'envoy' section"));
      }
    }
    return new EnvoyConfig(all);
  }

  private static void domain(String source, MappingNode top, long ticksPerSecond,
      Map<String, Node> domains, List<String> problems, Set<String> policies) {
    Node root;
    String domain = null;
    org.yaml.snakeyaml.nodes.Node descriptors = null;
    for (NodeTuple t : top.getValue()) {
      String k = scalar(t.getKeyNode());
      if ("domain".equals(k)) {
        domain = scalar(t.getValueNode());
        if (domain == null || domain.isBlank()) {
          problems.add(at(source, t.getValueNode()) + "'domain' must be a non-empty string");
          domain = null;
        }
      } else if ("descriptors".equals(k)) {
        descriptors = t.getValueNode();
      } else {
        problems.add(at(source, t.getKeyNode()) + "unknown key '" + k
            + "' (expected 'domain' and 'descriptors')");
      }
    }
    if (domain == null) {
      problems.add(source + ":1: 'domain' is missing");
      return;
    }
    if (domains.containsKey(domain)) {
      problems.add(at(source, top) + "domain '" + domain + "' is defined twice");
      return;
    }
    root = new Node(null, null, null, null, 0, false, false, false, domain);
    if (descriptors != null) {
      children(source, domain, root, descriptors, ticksPerSecond, problems, policies);
    }
    domains.put(domain, root);
  }

  private static void children(String source, String domain, Node parent,
      org.yaml.snakeyaml.nodes.Node list, long ticksPerSecond, List<String> problems,
      Set<String> policies) {
    if (!(list instanceof SequenceNode seq)) {
      problems.add(at(source, list) + "'descriptors' must be a list");
      return;
    }
    for (org.yaml.snakeyaml.nodes.Node item : seq.getValue()) {
      Node child = node(source, domain, parent, item, ticksPerSecond, problems, policies);
      if (child == null) {
        continue;
      }
      boolean twice = child.value == null ? parent.anyValue.containsKey(child.key)
          : child.value.endsWith("*")
              ? parent.prefixed.stream().anyMatch(p -> p.key.equals(child.key)
                  && p.value.equals(child.value))
              : parent.exact.containsKey(child.key + "=" + child.value);
      if (twice) {
        problems.add(at(source, item) + "descriptor " + child.path + " is defined twice");
        continue;
      }
      parent.add(child);
    }
  }

  private static Node node(String source, String domain, Node parent,
      org.yaml.snakeyaml.nodes.Node item, long ticksPerSecond, List<String> problems,
      Set<String> policies) {
    if (!(item instanceof MappingNode m)) {
      problems.add(at(source, item) + "a descriptor must be a mapping (key, value, rate_limit, ...)");
      return null;
    }
    Map<String, org.yaml.snakeyaml.nodes.Node> f = new LinkedHashMap<>();
    int before = problems.size();
    for (NodeTuple t : m.getValue()) {
      String k = scalar(t.getKeyNode());
      if (k == null || !NODE_KEYS.contains(k)) {
        problems.add(at(source, t.getKeyNode()) + "unknown key '" + k + "' (expected one of "
            + String.join(", ", new java.util.TreeSet<>(NODE_KEYS)) + ")");
      } else {
        f.put(k, t.getValueNode());
      }
    }
    String key = f.containsKey("key") ? scalar(f.get("key")) : null;
    if (key == null || key.isEmpty()) {
      problems.add(at(source, m) + "a descriptor needs a non-empty 'key'");
      return null;
    }
    String value = f.containsKey("value") ? scalar(f.get("value")) : null;
    if (value != null && value.isEmpty()) {
      value = null;
    }
    String path = (parent.key == null ? domain + "." : parent.path + ".") + key
        + (value == null ? "" : "_" + value);
    boolean unlimited = flag(source, f, "unlimited", problems);
    boolean shadow = flag(source, f, "shadow_mode", problems);
    boolean detailed = flag(source, f, "detailed_metric", problems);
    Limit limit = null;
    Unit unit = null;
    long perUnit = 0;
    String algorithm = "leaky-bucket";
    boolean overrides = false;
    org.yaml.snakeyaml.nodes.Node rl = f.get("rate_limit");
    if (rl != null) {
      if (!(rl instanceof MappingNode rm)) {
        problems.add(at(source, rl) + path + ": 'rate_limit' must be a mapping (unit,"
            + " requests_per_unit)");
      } else {
        Map<String, org.yaml.snakeyaml.nodes.Node> lf = new LinkedHashMap<>();
        for (NodeTuple t : rm.getValue()) {
          String k = scalar(t.getKeyNode());
          if (k == null || !LIMIT_KEYS.contains(k)) {
            problems.add(at(source, t.getKeyNode()) + path + ": unknown key '" + k
                + "' in rate_limit (expected unit, requests_per_unit, name)");
          } else {
            lf.put(k, t.getValueNode());
          }
        }
        String u = lf.containsKey("unit") ? scalar(lf.get("unit")) : null;
        try {
          unit = u == null ? null : Unit.valueOf(u.trim().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
          unit = null;
        }
        if (unit == null) {
          problems.add(at(source, lf.getOrDefault("unit", rm)) + path + ": 'unit' must be second,"
              + " minute, hour, day, week, month or year but was '" + u + "'");
        }
        String n = lf.containsKey("requests_per_unit") ? scalar(lf.get("requests_per_unit")) : null;
        try {
          perUnit = n == null ? -1 : Long.parseLong(n.trim());
        } catch (NumberFormatException e) {
          perUnit = -1;
        }
        if (perUnit < 0 || perUnit > 1_000_000_000_000L) {
          problems.add(at(source, lf.getOrDefault("requests_per_unit", rm)) + path
              + ": 'requests_per_unit' must be a whole number from 0 to 1000000000000 but was '"
              + n + "'");
        }
        if (problems.size() == before) {
          String name = lf.containsKey("name") ? scalar(lf.get("name")) : path;
          String[] ext = extension(source, path, f.get("sluice"), problems);
          if (ext != null) {
            algorithm = ext[0];
            overrides = ext[2] != null;
            try {
              limit = perUnit == 0 ? null : limitOf(algorithm,
                  ext[1] == null ? perUnit : Double.parseDouble(ext[1]), perUnit, unit, name,
                  ticksPerSecond);
            } catch (IllegalArgumentException e) {
              problems.add(source + ": " + path + ": " + e.getMessage());
            }
          }
        }
      }
    }
    String policy = f.containsKey("policy") ? scalar(f.get("policy")) : null;
    if (policy != null) {
      if (policies == null) {
        problems.add(at(source, f.get("policy")) + path + ": 'policy' names a policy of Sluice's"
            + " policies file, and is only valid there (in its 'envoy:' section)");
      } else if (!policies.contains(policy)) {
        problems.add(at(source, f.get("policy")) + path + ": no policy '" + policy + "' (the"
            + " file has " + new java.util.TreeSet<>(policies) + ")");
      } else if (rl != null) {
        problems.add(at(source, f.get("policy")) + path + ": give 'rate_limit' or 'policy', not"
            + " both");
      }
    }
    if (problems.size() > before) {
      return null;
    }
    Node node = new Node(key, value, limit, unit, perUnit, unlimited, shadow, detailed, path);
    node.policy = policy;
    node.algorithm = algorithm;
    node.overrides = overrides;
    if (f.containsKey("descriptors")) {
      children(source, domain, node, f.get("descriptors"), ticksPerSecond, problems, policies);
    }
    return node;
  }

  /**
   * The {@code sluice:} extension: {algorithm, capacity or null, "true" or null for overrides};
   * null after a problem.
   */
  private static String[] extension(String source, String path,
      org.yaml.snakeyaml.nodes.Node extension, List<String> problems) {
    String[] out = {"leaky-bucket", null, null};
    if (extension == null) {
      return out;
    }
    if (!(extension instanceof MappingNode em)) {
      problems.add(at(source, extension) + path + ": 'sluice' must be a mapping (algorithm,"
          + " capacity, overrides)");
      return null;
    }
    for (NodeTuple t : em.getValue()) {
      String k = scalar(t.getKeyNode());
      String v = scalar(t.getValueNode());
      if ("algorithm".equals(k)) {
        out[0] = v == null ? "" : v;
      } else if ("capacity".equals(k)) {
        try {
          Double.parseDouble(v);
          out[1] = v;
        } catch (NumberFormatException | NullPointerException e) {
          problems.add(at(source, t.getValueNode()) + path + ": sluice.capacity must be a"
              + " number but was '" + v + "'");
          return null;
        }
      } else if ("overrides".equals(k) && ("true".equals(v) || "false".equals(v))) {
        out[2] = "true".equals(v) ? v : null;
      } else {
        problems.add(at(source, t.getKeyNode()) + path + ": unknown key '" + k
            + "' in sluice (expected algorithm, capacity, overrides: true|false)");
        return null;
      }
    }
    return out;
  }

  /**
   * The Sluice limit of {@code perUnit} per {@code unit} (positive) with this algorithm and
   * capacity: a leaky bucket holding one unit's worth keeps envoyproxy/ratelimit's long-run rate.
   *
   * @throws IllegalArgumentException naming the problem
   */
  static Limit limitOf(String algorithm, double capacity, long perUnit, Unit unit, String name,
      long ticksPerSecond) {
    Limit l = LimitSpec.of(algorithm, capacity, Rate.of(perUnit, unit.length), unit.length);
    l = l.named(name);
    l.checkRepresentable(ticksPerSecond);
    return l;
  }

  private static boolean flag(String source, Map<String, org.yaml.snakeyaml.nodes.Node> f,
      String key, List<String> problems) {
    if (!f.containsKey(key)) {
      return false;
    }
    String v = scalar(f.get(key));
    if ("true".equalsIgnoreCase(v)) {
      return true;
    }
    if (!"false".equalsIgnoreCase(v)) {
      problems.add(at(source, f.get(key)) + "'" + key + "' must be true or false but was '" + v
          + "'");
    }
    return false;
  }

  private static String scalar(org.yaml.snakeyaml.nodes.Node n) {
    return n instanceof ScalarNode s ? s.getValue() : null;
  }

  private static String at(String source, org.yaml.snakeyaml.nodes.Node n) {
    return source + ":" + (n.getStartMark().getLine() + 1) + ": ";
  }

  /**
   * A Sluice limit as Envoy's {@code current_limit} shows it: its rate (a window's: the limit per
   * window) in the smallest unit, from a second to a day, in which it is a whole number of
   * requests; else per day, rounded down (at least 1).
   */
  static Object[] envoyRate(Limit l) {
    double perSecond = l.rate() != null ? l.rate().perSecond()
        : l.capacity() / (l.window().toNanos() / 1e9);
    for (Unit u : new Unit[] {Unit.SECOND, Unit.MINUTE, Unit.HOUR, Unit.DAY}) {
      double n = perSecond * u.length.getSeconds();
      long whole = Math.round(n);
      if (whole >= 1 && Math.abs(n - whole) <= 1e-9 * Math.max(1, n)) {
        return new Object[] {whole, u};
      }
    }
    return new Object[] {Math.max(1, (long) Math.floor(perSecond * 86_400)), Unit.DAY};
  }
}
