package dev.sluice.server;

import com.google.protobuf.ListValue;
import com.google.protobuf.NullValue;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
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
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.yaml.snakeyaml.error.MarkedYAMLException;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.ScalarNode;
import org.yaml.snakeyaml.nodes.SequenceNode;
import org.yaml.snakeyaml.nodes.Tag;

/**
 * Envoy rate limit configuration in envoyproxy/ratelimit's own format, loaded as ratelimit loads
 * it (its {@code src/config/config_impl.go}): one file per domain, a tree of descriptors.
 *
 * <p>What loads: every key ratelimit accepts ({@code domain, key, value, descriptors, rate_limit,
 * unit, requests_per_unit, unlimited, shadow_mode, quota_mode, name, replaces, detailed_metric,
 * value_to_metric, share_threshold, metadata}) wherever ratelimit accepts it (anywhere: a key in
 * a place where it means nothing is ignored, as ratelimit ignores it, with a warning), plus
 * Sluice's {@code sluice: {algorithm, capacity, overrides}} and, in the policies file's
 * {@code envoy:} section, {@code policy}. What is refused, as ratelimit refuses it, each problem
 * as {@code file:line: descriptor: problem}: an empty domain, a domain twice (unless merging), an
 * empty key, a descriptor twice under one parent, an unknown key, a key that is not a string, a
 * list of anything but mappings, a unit that is not second/minute/hour/day/week/month/year, a
 * unit beside {@code unlimited: true}, {@code requests_per_unit} outside 0..4294967295 (the
 * wire's uint32), an empty {@code replaces} entry or one naming its own limit,
 * {@code share_threshold} on a value without {@code *}.
 *
 * <p>Matching, as ratelimit's {@code GetLimit}: each entry of a request's descriptor, in order,
 * goes to the child whose {@code key_value} is the entry's, else to the first wildcard child (a
 * value with {@code *} anywhere, each matching any run of characters, in the order written) that
 * matches, else to the child with the entry's key and no value. The limit is that of the node
 * the last entry reaches; a descriptor that leaves the tree, or has more entries than the tree
 * is deep, has none.
 */
final class EnvoyConfig {
  /** Every key envoyproxy/ratelimit accepts, at any level (its {@code validKeys}). */
  static final Set<String> RATELIMIT_KEYS = Set.of("domain", "key", "value", "descriptors",
      "rate_limit", "unit", "requests_per_unit", "unlimited", "shadow_mode", "quota_mode", "name",
      "replaces", "detailed_metric", "value_to_metric", "share_threshold", "metadata");
  /** Where each key means something (elsewhere it is ignored, as ratelimit ignores it). */
  private static final Set<String> TOP_KEYS = Set.of("domain", "descriptors");
  private static final Set<String> NODE_KEYS = Set.of("key", "value", "descriptors",
      "rate_limit", "shadow_mode", "quota_mode", "detailed_metric", "value_to_metric",
      "share_threshold", "metadata", "sluice", "policy");
  private static final Set<String> LIMIT_KEYS = Set.of("unit", "requests_per_unit", "unlimited",
      "name", "replaces");
  /** The most {@code requests_per_unit} can be: the wire's uint32. */
  static final long MAX_REQUESTS_PER_UNIT = 0xFFFF_FFFFL;

  /** Envoy's units, as {@code RateLimitResponse.RateLimit.Unit} names them, and their lengths. */
  enum Unit {
    SECOND(1), MINUTE(60), HOUR(3600), DAY(86_400), WEEK(7 * 86_400), MONTH(30 * 86_400),
    YEAR(365 * 86_400);

    final long seconds;
    final Duration length;

    Unit(long seconds) {
      this.seconds = seconds;
      this.length = Duration.ofSeconds(seconds);
    }

    /** The unit a configuration names, in any case, as ratelimit reads it; null if none. */
    static Unit parse(String text) {
      if (text == null) {
        return null;
      }
      try {
        return valueOf(text.toUpperCase(Locale.ROOT));
      } catch (IllegalArgumentException e) {
        return null;
      }
    }
  }

  /** How configurations load: the clock's resolution, the default algorithm, domain merging. */
  record Settings(long ticksPerSecond, String algorithm, boolean mergeDomains) {
    static Settings of(long ticksPerSecond) {
      return new Settings(ticksPerSecond, "leaky-bucket", false);
    }
  }

  /** A {@code rate_limit}. {@code unit} is null only when {@code unlimited}. */
  record RateLimitDef(long requestsPerUnit, Unit unit, boolean unlimited, String name,
      List<String> replaces) {}

  /** A wildcard child of a node: its {@code key_value} split on {@code *}. */
  record Wildcard(String finalKey, String[] parts) {}

  /** One descriptor node. */
  static final class DescriptorNode {
    final String key;
    /** The value, or null for none. */
    final String value;
    /** {@code key} or {@code key_value}: the node's name among its siblings, as ratelimit's. */
    final String finalKey;
    /** The path from the domain, as ratelimit's stats key: {@code domain.key_value.key}. */
    final String path;
    /** Null without a {@code rate_limit}. */
    final RateLimitDef rateLimit;
    final boolean shadow;
    final boolean quota;
    final boolean detailed;
    final boolean valueToMetric;
    final boolean shareThreshold;
    /** The Sluice algorithm of its limit (the {@code sluice:} extension, or the default). */
    final String algorithm;
    /** Whether a request's {@code limit} override applies here: null for the service's default. */
    final Boolean overrides;
    /** The Sluice policy this node is held to (policies file only), or null. */
    final String policy;
    /** The Sluice limit: null without one (no rate_limit, unlimited, 0 per unit, a policy). */
    final Limit limit;
    /** The node's {@code metadata}, or null: returned in answers' dynamic metadata. */
    Struct metadata;
    final Map<String, DescriptorNode> children = new LinkedHashMap<>();
    final List<Wildcard> wildcards = new ArrayList<>();

    DescriptorNode(String key, String value, String path, RateLimitDef rateLimit, boolean[] flags,
        String algorithm, Boolean overrides, String policy, Limit limit) {
      this.key = key;
      this.value = value;
      this.finalKey = value == null ? key : key + "_" + value;
      this.path = path;
      this.rateLimit = rateLimit;
      this.shadow = flags[0];
      this.quota = flags[1];
      this.detailed = flags[2];
      this.valueToMetric = flags[3];
      this.shareThreshold = flags[4];
      this.algorithm = algorithm;
      this.overrides = overrides;
      this.policy = policy;
      this.limit = limit;
    }

    static DescriptorNode root(String domain) {
      return new DescriptorNode(null, null, domain, null, new boolean[5], null, null, null, null);
    }

    /** Whether the node has a rate limit that is not unlimited. */
    boolean limits() {
      return rateLimit != null && !rateLimit.unlimited();
    }

    /** Whether the node counts in envoyproxy/ratelimit's calendar windows. */
    boolean windowed() {
      return "fixed-window".equals(algorithm);
    }

    void add(DescriptorNode child) {
      children.put(child.finalKey, child);
      if (child.finalKey.indexOf('*') >= 0) {
        wildcards.add(new Wildcard(child.finalKey, child.finalKey.split("\\*", -1)));
      }
    }
  }

  /**
   * What a descriptor reaches: the node whose limit applies (null for none), and for each entry
   * matched by a {@code share_threshold} wildcard the pattern's value that stands for the
   * entry's value in the bucket's key (null when none).
   */
  record Match(DescriptorNode node, String[] shared) {}

  private final Map<String, DescriptorNode> domains;
  private final List<String> warnings;

  private EnvoyConfig(Map<String, DescriptorNode> domains, List<String> warnings) {
    this.domains = domains;
    this.warnings = warnings;
  }

  /** No domain at all. */
  static EnvoyConfig none() {
    return new EnvoyConfig(Map.of(), List.of());
  }

  /** The domains, each a root node whose children are its descriptors. */
  Map<String, DescriptorNode> domains() {
    return domains;
  }

  /** Keys that loaded but mean nothing where they are (ratelimit ignores them too). */
  List<String> warnings() {
    return warnings;
  }

  /**
   * The node a descriptor's entries reach in {@code domain}, as ratelimit's {@code GetLimit}
   * finds it; null for an unknown domain.
   */
  Match match(String domain, String[] keys, String[] values) {
    DescriptorNode root = domains.get(domain);
    if (root == null) {
      return null;
    }
    Map<String, DescriptorNode> level = root.children;
    DescriptorNode previous = root;
    DescriptorNode found = null;
    String[] shared = null;
    int n = keys.length;
    for (int i = 0; i < n; i++) {
      String finalKey = keys[i] + "_" + values[i];
      DescriptorNode next = level.get(finalKey);
      boolean wild = false;
      if (next == null) {
        for (Wildcard w : previous.wildcards) {
          if (wildcardMatch(w.parts(), finalKey)) {
            next = level.get(w.finalKey());
            wild = true;
            break;
          }
        }
      }
      if (next == null) {
        next = level.get(keys[i]);
        wild = false;
      }
      if (next == null) {
        break;
      }
      if (wild && next.shareThreshold) {
        if (shared == null) {
          shared = new String[n];
        }
        String prefix = keys[i] + "_";
        shared[i] = next.finalKey.startsWith(prefix) ? next.finalKey.substring(prefix.length())
            : next.finalKey;
      }
      if ((next.rateLimit != null || next.policy != null) && i == n - 1) {
        found = next;
      }
      if (next.children.isEmpty()) {
        break;
      }
      level = next.children;
      previous = next;
    }
    return new Match(found, found == null ? null : shared);
  }

  /**
   * Whether {@code value} matches a pattern split on {@code *}: it starts with the first part,
   * ends with the last, and holds the middle ones in order between them (ratelimit's
   * {@code wildcardMatch}).
   */
  static boolean wildcardMatch(String[] parts, String value) {
    if (parts.length == 1) {
      return parts[0].equals(value);
    }
    String first = parts[0];
    String last = parts[parts.length - 1];
    if (!value.startsWith(first) || !value.endsWith(last)) {
      return false;
    }
    int fixed = 0;
    for (String p : parts) {
      fixed += p.length();
    }
    if (value.length() < fixed) {
      return false;
    }
    int from = first.length();
    int to = value.length() - last.length();
    for (int i = 1; i < parts.length - 1; i++) {
      int at = value.indexOf(parts[i], from);
      if (at < 0 || at + parts[i].length() > to) {
        return false;
      }
      from = at + parts[i].length();
    }
    return true;
  }

  /** Every node with a Sluice limit, for building limiters. */
  List<DescriptorNode> limited() {
    List<DescriptorNode> out = new ArrayList<>();
    for (DescriptorNode d : domains.values()) {
      collect(d, out);
    }
    return out;
  }

  private static void collect(DescriptorNode n, List<DescriptorNode> out) {
    if (n.limit != null) {
      out.add(n);
    }
    for (DescriptorNode c : n.children.values()) {
      collect(c, out);
    }
  }

  /**
   * Loads a file, or every {@code .yaml}/{@code .yml} file of a directory (as envoyproxy/ratelimit
   * reads its runtime directory), in name order.
   */
  static EnvoyConfig load(Path path, Settings settings) throws ConfigException {
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
    return parse(texts, settings);
  }

  /** {@link #load(Path, Settings)} with the default settings. */
  static EnvoyConfig load(Path path, long ticksPerSecond) throws ConfigException {
    return load(path, Settings.of(ticksPerSecond));
  }

  /** Validates YAML texts by source name; every problem is reported as {@code source:line}. */
  static EnvoyConfig parse(Map<String, String> texts, Settings settings) throws ConfigException {
    Loader loader = new Loader(settings, null);
    for (Map.Entry<String, String> t : texts.entrySet()) {
      loader.file(t.getKey(), t.getValue());
    }
    if (!loader.problems.isEmpty()) {
      throw new ConfigException(byLine(loader.problems));
    }
    return new EnvoyConfig(loader.domains, List.copyOf(loader.warnings));
  }

  /** A problem's {@code :line: } after its source. */
  private static final Pattern LINE =
      Pattern.compile(":(\\d+): ");

  /** Problems in file order, then line order (each is {@code source:line: ...}). */
  private static List<String> byLine(List<String> problems) {
    List<String> files = new ArrayList<>();
    for (String p : problems) {
      String f = source(p);
      if (!files.contains(f)) {
        files.add(f);
      }
    }
    List<String> sorted = new ArrayList<>(problems);
    sorted.sort(Comparator.comparingInt((String p) -> files.indexOf(source(p)))
        .thenComparingLong(p -> {
          Matcher m = LINE.matcher(p);
          return m.find() ? Long.parseLong(m.group(1)) : 0;
        }));
    return sorted;
  }

  private static String source(String problem) {
    Matcher m = LINE.matcher(problem);
    return m.find() ? problem.substring(0, m.start()) : problem;
  }

  /** {@link #parse(Map, Settings)} with the default settings. */
  static EnvoyConfig parse(Map<String, String> texts, long ticksPerSecond)
      throws ConfigException {
    return parse(texts, Settings.of(ticksPerSecond));
  }

  /**
   * The {@code envoy:} section of Sluice's policies file: a list of domains in Envoy's format
   * whose descriptors may also say {@code policy: <name>} to be held to one of the file's
   * policies (several limits, groups: anything a policy is). Problems go to {@code problems}.
   */
  static EnvoyConfig section(String source, Node list,
      long ticksPerSecond, Set<String> policies, List<String> problems) {
    Loader loader = new Loader(Settings.of(ticksPerSecond), policies);
    if (!(list instanceof SequenceNode seq)) {
      problems.add(at(source, list) + "'envoy' must be a list of domains ({domain, descriptors})");
      return new EnvoyConfig(loader.domains, List.of());
    }
    for (Node item : seq.getValue()) {
      if (!(item instanceof MappingNode m)) {
        problems.add(at(source, item) + "an 'envoy' domain must be a mapping (domain, descriptors)");
      } else {
        loader.domain(source, m);
      }
    }
    problems.addAll(loader.problems);
    return new EnvoyConfig(loader.domains, List.copyOf(loader.warnings));
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
    Map<String, DescriptorNode> all = new LinkedHashMap<>(a.domains);
    for (Map.Entry<String, DescriptorNode> e : b.domains.entrySet()) {
      if (all.putIfAbsent(e.getKey(), e.getValue()) != null) {
        throw new ConfigException(List.of("domain '" + e.getKey() + "' is in both the Envoy"
            + " configuration (--envoy-config) and the policies file's 'envoy' section"));
      }
    }
    List<String> warnings = new ArrayList<>(a.warnings);
    warnings.addAll(b.warnings);
    return new EnvoyConfig(all, List.copyOf(warnings));
  }

  /** Reads files into domains, collecting every problem. */
  private static final class Loader {
    final Settings settings;
    final Set<String> policies;
    final Map<String, DescriptorNode> domains = new LinkedHashMap<>();
    final List<String> problems = new ArrayList<>();
    final List<String> warnings = new ArrayList<>();

    Loader(Settings settings, Set<String> policies) {
      this.settings = settings;
      this.policies = policies;
    }

    void file(String source, String text) {
      Node yaml;
      try (Reader r = new StringReader(text)) {
        yaml = YamlLoader.yaml().compose(r);
      } catch (MarkedYAMLException e) {
        int line = e.getProblemMark() != null ? e.getProblemMark().getLine() + 1 : 1;
        problems.add(source + ":" + line + ": not valid YAML: " + e.getProblem());
        return;
      } catch (IOException | RuntimeException e) {
        problems.add(source + ":1: not valid YAML: " + e.getMessage());
        return;
      }
      if (yaml == null) {
        problems.add(source + ":1: config file cannot have empty domain (the file is empty)");
        return;
      }
      if (!(yaml instanceof MappingNode top)) {
        problems.add(source + ":1: expected a mapping with 'domain' and 'descriptors'");
        return;
      }
      domain(source, top);
    }

    void domain(String source, MappingNode top) {
      int before = problems.size();
      Map<String, Node> f = fields(source, top, TOP_KEYS, "the file");
      String domain = text(source, f.get("domain"), "domain");
      if (problems.size() > before) {
        return;
      }
      if (domain == null || domain.isEmpty()) {
        problems.add(at(source, f.getOrDefault("domain", top))
            + "config file cannot have empty domain");
        return;
      }
      DescriptorNode root = domains.get(domain);
      if (root != null && !settings.mergeDomains()) {
        problems.add(at(source, f.get("domain")) + "duplicate domain '" + domain
            + "' in config file (merging domains across files is off)");
        return;
      }
      if (root == null) {
        root = DescriptorNode.root(domain);
      }
      Node list = f.get("descriptors");
      if (list != null) {
        children(source, domain, root, list);
      }
      if (problems.size() == before) {
        domains.putIfAbsent(domain, root);
      }
    }

    void children(String source, String domain, DescriptorNode parent,
        Node list) {
      if (isNull(list)) {
        return;   // "descriptors:" left empty
      }
      if (!(list instanceof SequenceNode seq)) {
        problems.add(at(source, list) + parent.path + ": 'descriptors' must be a list");
        return;
      }
      for (Node item : seq.getValue()) {
        if (!(item instanceof MappingNode m)) {
          problems.add(at(source, item) + parent.path + ": config error, yaml file contains list"
              + " of type other than map: " + describe(item));
          continue;
        }
        DescriptorNode child = node(source, domain, parent, m);
        if (child == null) {
          continue;
        }
        if (parent.children.containsKey(child.finalKey)) {
          problems.add(at(source, item) + child.path + ": duplicate descriptor composite key '"
              + child.path + "'");
          continue;
        }
        parent.add(child);
      }
    }

    private DescriptorNode node(String source, String domain, DescriptorNode parent, MappingNode m) {
      int before = problems.size();
      String where = parent.path + "." + named(m);
      Map<String, Node> f = fields(source, m, NODE_KEYS, where);
      int named = problems.size();
      String key = text(source, f.get("key"), "key");
      String value = text(source, f.get("value"), "value");
      if (problems.size() > named) {
        return null;
      }
      if (key == null || key.isEmpty()) {
        problems.add(at(source, m) + where + ": descriptor has empty key");
        return null;
      }
      if (value != null && value.isEmpty()) {
        value = null;
      }
      String finalKey = value == null ? key : key + "_" + value;
      String path = parent.path + "." + finalKey;
      boolean[] flags = {
          flag(source, f, "shadow_mode", path), flag(source, f, "quota_mode", path),
          flag(source, f, "detailed_metric", path), flag(source, f, "value_to_metric", path),
          flag(source, f, "share_threshold", path)};
      if (flags[4] && finalKey.indexOf('*') < 0) {
        problems.add(at(source, f.get("share_threshold")) + path + ": share_threshold can only be"
            + " used with wildcard values (containing '*'), but found key '" + finalKey + "'");
      }
      if (f.containsKey("metadata") && !isNull(f.get("metadata"))
          && !(f.get("metadata") instanceof MappingNode)) {
        problems.add(at(source, f.get("metadata")) + path + ": error parsing metadata: it must"
            + " be a mapping");
      }
      RateLimitDef rateLimit = null;
      Node rl = f.get("rate_limit");
      if (rl != null && !isNull(rl)) {
        rateLimit = rateLimit(source, path, rl);
      }
      String[] ext = extension(source, path, f.get("sluice"));
      String algorithm = ext == null ? settings.algorithm() : ext[0];
      Boolean overrides = (ext == null || ext[2] == null) ? null : Boolean.valueOf(ext[2]);
      String policy = text(source, f.get("policy"), "policy");
      if (policy != null) {
        if (policies == null) {
          problems.add(at(source, f.get("policy")) + path + ": 'policy' names a policy of"
              + " Sluice's policies file, and is only valid there (in its 'envoy:' section)");
        } else if (!policies.contains(policy)) {
          problems.add(at(source, f.get("policy")) + path + ": no policy '" + policy + "' (the"
              + " file has " + new TreeSet<>(policies) + ")");
        } else if (rl != null) {
          problems.add(at(source, f.get("policy")) + path + ": give 'rate_limit' or 'policy',"
              + " not both");
        }
      }
      Limit limit = null;
      if (problems.size() == before && rateLimit != null && !rateLimit.unlimited()
          && rateLimit.requestsPerUnit() > 0) {
        try {
          limit = limitOf(algorithm, ext == null || ext[1] == null ? rateLimit.requestsPerUnit()
              : Double.parseDouble(ext[1]), rateLimit.requestsPerUnit(), rateLimit.unit(),
              rateLimit.name() != null ? rateLimit.name() : path, settings.ticksPerSecond());
        } catch (IllegalArgumentException e) {
          problems.add(at(source, rl) + path + ": " + e.getMessage());
        }
      }
      if (problems.size() > before) {
        return null;
      }
      DescriptorNode node = new DescriptorNode(key, value, path, rateLimit, flags, algorithm, overrides, policy, limit);
      if (f.get("metadata") instanceof MappingNode meta) {
        node.metadata = toValue(meta).getStructValue();
      }
      if (f.containsKey("descriptors")) {
        children(source, domain, node, f.get("descriptors"));
      }
      return node;
    }

    /** A descriptor's name before it is read, for messages: key_value, or a placeholder. */
    private static String named(MappingNode m) {
      String key = null;
      String value = null;
      for (NodeTuple t : m.getValue()) {
        String k = scalar(t.getKeyNode());
        if ("key".equals(k)) {
          key = scalar(t.getValueNode());
        } else if ("value".equals(k)) {
          value = scalar(t.getValueNode());
        }
      }
      if (key == null || key.isEmpty()) {
        return "<descriptor>";
      }
      return value == null || value.isEmpty() ? key : key + "_" + value;
    }

    private RateLimitDef rateLimit(String source, String path, Node rl) {
      if (!(rl instanceof MappingNode rm)) {
        problems.add(at(source, rl) + path + ": 'rate_limit' must be a mapping (unit,"
            + " requests_per_unit, unlimited, name, replaces)");
        return null;
      }
      int before = problems.size();
      Map<String, Node> f = fields(source, rm, LIMIT_KEYS,
          path + ".rate_limit");
      boolean unlimited = flag(source, f, "unlimited", path);
      String unitText = text(source, f.get("unit"), "unit");
      Unit unit = Unit.parse(unitText);
      if (unlimited) {
        if (unit != null) {
          problems.add(at(source, f.get("unit")) + path + ": should not specify rate limit unit"
              + " when unlimited");
        }
        unit = null;
      } else if (unit == null && problems.size() == before) {
        problems.add(at(source, f.getOrDefault("unit", rm)) + path + ": invalid rate limit unit '"
            + (unitText == null ? "" : unitText) + "' (expected second, minute, hour, day, week,"
            + " month or year)");
      }
      long perUnit = 0;
      Node n = f.get("requests_per_unit");
      if (n != null && !isNull(n)) {
        String t = n instanceof ScalarNode s ? s.getValue().trim().replace("_", "") : null;
        try {
          perUnit = t == null || !t.matches("\\+?[0-9]+") ? -1 : Long.parseLong(t.replace("+", ""));
        } catch (NumberFormatException e) {
          perUnit = -1;
        }
        if (perUnit < 0 || perUnit > MAX_REQUESTS_PER_UNIT) {
          problems.add(at(source, n) + path + ": 'requests_per_unit' must be a whole number from"
              + " 0 to " + MAX_REQUESTS_PER_UNIT + " (the wire's uint32) but was '"
              + (t == null ? describe(n) : ((ScalarNode) n).getValue()) + "'");
        }
      }
      String name = text(source, f.get("name"), "name");
      if (name != null && name.isEmpty()) {
        name = null;
      }
      List<String> replaces = new ArrayList<>();
      Node r = f.get("replaces");
      if (r != null && !isNull(r)) {
        if (!(r instanceof SequenceNode rs)) {
          problems.add(at(source, r) + path + ": 'replaces' must be a list of {name: ...}");
        } else {
          for (Node item : rs.getValue()) {
            if (!(item instanceof MappingNode im)) {
              problems.add(at(source, item) + path + ": config error, yaml file contains list of"
                  + " type other than map: " + describe(item));
              continue;
            }
            Map<String, Node> rf = fields(source, im, Set.of("name"),
                path + ".rate_limit.replaces");
            String replaced = text(source, rf.get("name"), "name");
            if (replaced == null || replaced.isEmpty()) {
              problems.add(at(source, item) + path + ": should not have an empty replaces entry");
            } else if (replaced.equals(name)) {
              problems.add(at(source, item) + path + ": replaces should not contain name of same"
                  + " descriptor ('" + name + "')");
            } else {
              replaces.add(replaced);
            }
          }
        }
      }
      return problems.size() > before ? null
          : new RateLimitDef(perUnit, unit, unlimited, name, List.copyOf(replaces));
    }

    /**
     * The {@code sluice:} extension: {algorithm, capacity or null, "true"/"false" or null for
     * overrides}; null when absent or after a problem.
     */
    private String[] extension(String source, String path,
        Node extension) {
      if (extension == null) {
        return null;
      }
      String[] out = {settings.algorithm(), null, null};
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
          out[2] = v;
        } else {
          problems.add(at(source, t.getKeyNode()) + path + ": unknown key '" + k
              + "' in sluice (expected algorithm, capacity, overrides: true|false)");
          return null;
        }
      }
      if ("fixed-window".equals(out[0]) && out[1] != null) {
        problems.add(at(source, extension) + path + ": sluice.capacity does not apply to"
            + " fixed-window, which counts requests_per_unit in each calendar unit as"
            + " envoyproxy/ratelimit does");
        return null;
      }
      return out;
    }

    /**
     * The keys of a mapping: ratelimit's keys are accepted anywhere, as ratelimit accepts them
     * (those that mean nothing here are ignored with a warning); anything else is refused.
     */
    private Map<String, Node> fields(String source, MappingNode m,
        Set<String> meaningful, String where) {
      Map<String, Node> f = new LinkedHashMap<>();
      for (NodeTuple t : m.getValue()) {
        Node keyNode = t.getKeyNode();
        if (!(keyNode instanceof ScalarNode ks) || !Tag.STR.equals(ks.getTag())) {
          problems.add(at(source, keyNode) + where + ": config error, key is not of type string: "
              + describe(keyNode));
          continue;
        }
        String k = ks.getValue();
        if (meaningful.contains(k)) {
          f.put(k, t.getValueNode());
        } else if (RATELIMIT_KEYS.contains(k)) {
          warnings.add(at(source, keyNode) + where + ": '" + k + "' means nothing here and is"
              + " ignored, as envoyproxy/ratelimit ignores it");
        } else {
          problems.add(at(source, keyNode) + where + ": config error, unknown key '" + k
              + "' (expected one of " + String.join(", ", new TreeSet<>(meaningful)) + ")");
        }
        checkTypes(source, t.getValueNode(), k, where);
      }
      return f;
    }

    /** ratelimit's type checks below a key: lists hold only mappings; no floats. */
    private void checkTypes(String source, Node v, String key,
        String where) {
      if ("metadata".equals(key) || "sluice".equals(key)) {
        return;
      }
      if (v instanceof ScalarNode s && Tag.FLOAT.equals(s.getTag())) {
        problems.add(at(source, v) + where + ": error checking config: '" + key + "' is a"
            + " floating-point number (" + s.getValue() + ")");
      }
    }

    private String text(String source, Node n, String key) {
      if (n == null || isNull(n)) {
        return null;
      }
      if (!(n instanceof ScalarNode s)) {
        problems.add(at(source, n) + "'" + key + "' must be a string but was " + describe(n));
        return null;
      }
      return s.getValue();
    }

    private boolean flag(String source, Map<String, Node> f, String key,
        String path) {
      Node n = f.get(key);
      if (n == null || isNull(n)) {
        return false;
      }
      String v = scalar(n);
      if (v != null) {
        switch (v) {
          case "true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON", "y", "Y":
            return true;
          case "false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF", "n", "N":
            return false;
          default:
            break;
        }
      }
      problems.add(at(source, n) + path + ": '" + key + "' must be true or false but was '"
          + (v == null ? describe(n) : v) + "'");
      return false;
    }
  }

  /** A YAML node as a protobuf value, as ratelimit's {@code structpb.NewStruct} makes it. */
  static Value toValue(Node n) {
    Value.Builder v = Value.newBuilder();
    if (n instanceof MappingNode m) {
      Struct.Builder s = Struct.newBuilder();
      for (NodeTuple t : m.getValue()) {
        String k = t.getKeyNode() instanceof ScalarNode ks ? ks.getValue() : String.valueOf(
            t.getKeyNode());
        s.putFields(k, toValue(t.getValueNode()));
      }
      return v.setStructValue(s).build();
    }
    if (n instanceof SequenceNode q) {
      ListValue.Builder l = ListValue.newBuilder();
      for (Node item : q.getValue()) {
        l.addValues(toValue(item));
      }
      return v.setListValue(l).build();
    }
    ScalarNode s = (ScalarNode) n;
    if (Tag.NULL.equals(s.getTag())) {
      return v.setNullValue(NullValue.NULL_VALUE).build();
    }
    if (Tag.BOOL.equals(s.getTag())) {
      return v.setBoolValue(s.getValue().toLowerCase(Locale.ROOT).matches("true|yes|on|y"))
          .build();
    }
    if (Tag.INT.equals(s.getTag()) || Tag.FLOAT.equals(s.getTag())) {
      try {
        return v.setNumberValue(Double.parseDouble(s.getValue().replace("_", ""))).build();
      } catch (NumberFormatException e) {
        return v.setStringValue(s.getValue()).build();
      }
    }
    return v.setStringValue(s.getValue()).build();
  }

  private static boolean isNull(Node n) {
    return n instanceof ScalarNode s && Tag.NULL.equals(s.getTag());
  }

  private static String describe(Node n) {
    if (n instanceof ScalarNode s) {
      return s.getValue();
    }
    return n instanceof SequenceNode ? "a list" : "a mapping";
  }

  private static String scalar(Node n) {
    return n instanceof ScalarNode s ? s.getValue() : null;
  }

  private static String at(String source, Node n) {
    return source + ":" + (n.getStartMark().getLine() + 1) + ": ";
  }

  /**
   * The Sluice limit of {@code perUnit} per {@code unit} (positive) with this algorithm and
   * capacity. A leaky bucket holding one unit's worth keeps envoyproxy/ratelimit's long-run rate.
   * {@code fixed-window} is ratelimit's own counter: a window per calendar unit, keyed by the
   * unit's number, holding {@code perUnit + 1} (a count of {@code perUnit + 1} means "over"), two
   * units long so that clocks a little apart still share one window per calendar unit.
   *
   * @throws IllegalArgumentException naming the problem
   */
  static Limit limitOf(String algorithm, double capacity, long perUnit, Unit unit, String name,
      long ticksPerSecond) {
    Limit l = "fixed-window".equals(algorithm)
        ? Limit.fixedWindow(perUnit + 1, unit.length.multipliedBy(2))
        : LimitSpec.of(algorithm, capacity, Rate.of(perUnit, unit.length), unit.length);
    l = l.named(name);
    l.checkRepresentable(ticksPerSecond);
    return l;
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
      double n = perSecond * u.seconds;
      long whole = Math.round(n);
      if (whole >= 1 && Math.abs(n - whole) <= 1e-9 * Math.max(1, n)) {
        return new Object[] {whole, u};
      }
    }
    return new Object[] {Math.max(1, (long) Math.floor(perSecond * 86_400)), Unit.DAY};
  }
}
