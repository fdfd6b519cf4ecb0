package dev.sluice.server;

import dev.sluice.Limit;
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
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
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
 * </pre>
 */
public final class Policies {
  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9_.-]{1,64}");
  private static final Pattern DURATION = Pattern.compile("(\\d+(?:\\.\\d+)?)(ms|s|m|h|d)");
  private static final Set<String> LIMIT_KEYS =
      Set.of("algorithm", "capacity", "burst", "rate", "limit", "window", "penalty", "name");

  private final Map<String, List<Limit>> policies;

  private Policies(Map<String, List<Limit>> policies) {
    this.policies = policies;
  }

  /** The policies, by name, in file order. */
  public Map<String, List<Limit>> all() {
    return policies;
  }

  /** Reads and validates a file. */
  public static Policies load(Path file) throws ConfigException {
    String text;
    try {
      text = Files.readString(file, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new ConfigException(List.of(file + ": cannot be read: " + e));
    }
    return parse(file.toString(), text);
  }

  /** Validates YAML text; {@code source} names it in messages. */
  public static Policies parse(String source, String text) throws ConfigException {
    List<String> problems = new ArrayList<>();
    Node root;
    try (Reader r = new StringReader(text)) {
      LoaderOptions options = new LoaderOptions();
      options.setAllowDuplicateKeys(false);
      options.setMaxAliasesForCollections(10);
      root = new Yaml(options).compose(r);
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
    for (NodeTuple t : top.getValue()) {
      String k = scalar(t.getKeyNode());
      if ("policies".equals(k)) {
        policiesNode = t.getValueNode();
      } else {
        problems.add(at(source, t.getKeyNode()) + "unknown key '" + k + "' (expected 'policies')");
      }
    }
    Map<String, List<Limit>> out = new LinkedHashMap<>();
    if (policiesNode == null) {
      problems.add(source + ":1: 'policies' is missing");
    } else if (!(policiesNode instanceof MappingNode pm) || pm.getValue().isEmpty()) {
      problems.add(at(source, policiesNode) + "'policies' must map policy names to their limits");
    } else {
      java.util.Set<String> seen = new java.util.HashSet<>();
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
        List<Limit> limits = policy(source, name, t.getValueNode(), problems);
        if (limits != null) {
          out.put(name, List.copyOf(limits));
        }
      }
    }
    if (!problems.isEmpty()) {
      throw new ConfigException(problems);
    }
    return new Policies(java.util.Collections.unmodifiableMap(out));
  }

  private static List<Limit> policy(String source, String name, Node node, List<String> problems) {
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
      Limit l = limit(source, "policy '" + name + "'", name, m, problems);
      if (l != null) {
        limits.add(l);
      }
      return problems.isEmpty() ? limits : null;
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
        Limit l = limit(source, what, seq.getValue().size() == 1 ? name : name + "/" + i, lm, problems);
        if (l != null) {
          limits.add(l);
        }
      }
      i++;
    }
    return problems.size() == before ? limits : null;
  }

  private static Limit limit(String source, String what, String defaultName, MappingNode m,
      List<String> problems) {
    Map<String, Node> f = new LinkedHashMap<>();
    int before = problems.size();
    for (NodeTuple t : m.getValue()) {
      String k = scalar(t.getKeyNode());
      if (f.containsKey(k)) {
        problems.add(at(source, t.getKeyNode()) + what + ": '" + k + "' is given twice");
      } else if (!LIMIT_KEYS.contains(k)) {
        problems.add(at(source, t.getKeyNode()) + what + ": unknown key '" + k + "' (expected one of"
            + " algorithm, capacity, rate, limit, window, penalty, name)");
      } else if (!(t.getValueNode() instanceof ScalarNode)) {
        problems.add(at(source, t.getValueNode()) + what + ": '" + k + "' must be a single value");
      } else {
        f.put(k, t.getValueNode());
      }
    }
    if (problems.size() > before) {
      return null;
    }
    Node alg = f.get("algorithm");
    if (alg == null) {
      problems.add(at(source, m) + what + ": 'algorithm' is missing (leaky-bucket, token-bucket,"
          + " gcra, fixed-window or sliding-window)");
      return null;
    }
    String algorithm = scalar(alg).toLowerCase(Locale.ROOT);
    boolean bucket = switch (algorithm) {
      case "leaky-bucket", "token-bucket", "gcra" -> true;
      case "fixed-window", "sliding-window" -> false;
      default -> {
        problems.add(at(source, alg) + what + ": unknown algorithm '" + scalar(alg) + "' (expected"
            + " leaky-bucket, token-bucket, gcra, fixed-window or sliding-window)");
        yield false;
      }
    };
    if (problems.size() > before) {
      return null;
    }
    try {
      Limit l;
      if (bucket) {
        for (String wrong : new String[] {"limit", "window"}) {
          if (f.containsKey(wrong)) {
            problems.add(at(source, f.get(wrong)) + what + ": '" + wrong + "' is for windows; a "
                + algorithm + " takes 'capacity' and 'rate'");
            return null;
          }
        }
        Node cap = f.containsKey("capacity") ? f.get("capacity") : f.get("burst");
        Node rate = f.get("rate");
        if (cap == null || rate == null) {
          problems.add(at(source, m) + what + ": a " + algorithm + " needs 'capacity' and 'rate'");
          return null;
        }
        double c = number(source, what, "capacity", cap, problems);
        Rate r = rate(source, what, rate, problems);
        if (problems.size() > before) {
          return null;
        }
        l = switch (algorithm) {
          case "leaky-bucket" -> Limit.leakyBucket(c, r);
          case "token-bucket" -> Limit.tokenBucket(c, r);
          default -> Limit.gcra(r, c);
        };
      } else {
        for (String wrong : new String[] {"capacity", "rate", "burst"}) {
          if (f.containsKey(wrong)) {
            problems.add(at(source, f.get(wrong)) + what + ": '" + wrong + "' is for buckets; a "
                + algorithm + " takes 'limit' and 'window'");
            return null;
          }
        }
        Node lim = f.get("limit");
        Node win = f.get("window");
        if (lim == null || win == null) {
          problems.add(at(source, m) + what + ": a " + algorithm + " needs 'limit' and 'window'");
          return null;
        }
        double n = number(source, what, "limit", lim, problems);
        Duration w = duration(source, what, "window", win, problems);
        if (problems.size() > before) {
          return null;
        }
        l = algorithm.equals("fixed-window") ? Limit.fixedWindow(n, w) : Limit.slidingWindow(n, w);
      }
      if (f.containsKey("penalty")) {
        Duration p = duration(source, what, "penalty", f.get("penalty"), problems);
        if (p == null) {
          return null;
        }
        l = l.withPenalty(p);
      }
      return l.named(f.containsKey("name") ? scalar(f.get("name")) : defaultName);
    } catch (IllegalArgumentException e) {
      problems.add(at(source, m) + what + ": " + e.getMessage());
      return null;
    }
  }

  private static double number(String source, String what, String key, Node n, List<String> problems) {
    try {
      double v = Double.parseDouble(scalar(n));
      if (Double.isFinite(v)) {
        return v;
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    problems.add(at(source, n) + what + ": '" + key + "' must be a number but was '" + scalar(n) + "'");
    return Double.NaN;
  }

  private static Rate rate(String source, String what, Node n, List<String> problems) {
    String s = scalar(n).trim();
    int slash = s.indexOf('/');
    if (slash > 0) {
      try {
        double amount = Double.parseDouble(s.substring(0, slash).trim());
        String per = s.substring(slash + 1).trim();
        Duration period = parseDuration(Character.isDigit(per.isEmpty() ? 'x' : per.charAt(0)) ? per : "1" + per);
        if (period != null && Double.isFinite(amount)) {
          return Rate.of(amount, period);
        }
      } catch (NumberFormatException e) {
        // reported below
      } catch (IllegalArgumentException e) {
        problems.add(at(source, n) + what + ": 'rate' " + e.getMessage());
        return null;
      }
    }
    problems.add(at(source, n) + what + ": 'rate' must look like 10/s, 100/1m, 1.5/s or 5/250ms"
        + " but was '" + s + "'");
    return null;
  }

  private static Duration duration(String source, String what, String key, Node n, List<String> problems) {
    Duration d = parseDuration(scalar(n).trim());
    if (d == null) {
      problems.add(at(source, n) + what + ": '" + key + "' must be a duration such as 250ms, 30s,"
          + " 5m, 1h or 1d but was '" + scalar(n) + "'");
    }
    return d;
  }

  /** {@code 250ms}, {@code 30s}, {@code 1.5m}, {@code 1h}, {@code 7d}; null if not one. */
  static Duration parseDuration(String s) {
    Matcher m = DURATION.matcher(s);
    if (!m.matches()) {
      return null;
    }
    double v = Double.parseDouble(m.group(1));
    long unitNanos = switch (m.group(2)) {
      case "ms" -> 1_000_000L;
      case "s" -> 1_000_000_000L;
      case "m" -> 60_000_000_000L;
      case "h" -> 3_600_000_000_000L;
      default -> 86_400_000_000_000L;
    };
    double nanos = v * unitNanos;
    if (nanos < 1 || nanos > 9.2e18) {
      return null;
    }
    return Duration.ofNanos(Math.round(nanos));
  }

  private static String scalar(Node n) {
    return n instanceof ScalarNode s ? s.getValue() : null;
  }

  private static String at(String source, Node n) {
    return source + ":" + (n.getStartMark().getLine() + 1) + ": ";
  }
}
