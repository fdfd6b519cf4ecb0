package dev.sluice.concurrency;

import dev.sluice.Specs;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.UnaryOperator;
import java.util.regex.Pattern;

/**
 * A concurrency limit written as words, the way Sluice's configuration files write it: the
 * service's policies YAML and the Spring Boot starter's {@code application.yml} both read their
 * concurrency limits through this one class, so they take the same fields, with the same
 * defaults, and report the same problems in the same words. It is to {@link ConcurrencyLimiter}
 * what {@link dev.sluice.LimitSpec} is to a rate limit.
 *
 * <pre>
 * limit:         20        # the most weight in flight per key (or adaptive)
 * adaptive:      gradient  # none (default), gradient or aimd
 * minLimit:      1         # an adaptive limit's floor, ceiling and start (1, 1000, 20)
 * maxLimit:      1000
 * initialLimit:  20
 * lease:         30s       # a permit's life without a renewal (1ms to 1d; default 30s)
 * maxWaiters:    100       # acquisitions that may wait per key (0 to 1000000; default 100)
 * queueOrder:    fifo      # fifo (default) or lifo
 * maximumKeys:   100000    # keys held at once (default 100000)
 * shares: {critical: 1, normal: 0.8, sheddable: 0.5}   # each priority's share, not increasing
 * codelTarget:   5ms       # CoDel on each key's queue: both or neither
 * codelInterval: 100ms
 * group:                   # the keys share a limit: see ConcurrencyGroup
 *   limit: 100             # required
 *   assured: 10            # every key's assured share (default 0)
 *   assuredKeys: {acme: 20}
 *   reserve: 30            # default: what the assured shares leave
 *   key: all               # all (one group) or prefix (the key up to its separator)
 *   separator: /           # with key: prefix (default /)
 * fair:                    # fair queuing among flows for the waiters: see FairQueuing
 *   queues: 1024           # queues a priority (default 1024)
 *   handSize: 6            # queues a flow is dealt (default 6)
 *   queueLength: 100       # waiters a queue holds (default 100)
 *   memory: 10s            # how long a flow's demand is remembered (default 10s)
 * </pre>
 *
 * <p>A value may be the text a file holds ({@code "30s"}, {@code "20"}) or, from a binder that
 * has typed it already, a {@link Number} or a {@link Duration}; {@code shares}, {@code group} and
 * {@code assuredKeys} are maps.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/concurrency.md#settings">docs/concurrency.md, "Settings"</a>.
 *
 * @param name the limit's name: 1 to 64 of {@code A-Z a-z 0-9 _ . -}
 * @param limit the most weight in flight per key; 0 when adaptive, or when only a group limits
 * @param lease how long a permit lasts without a renewal
 * @param maxWaiters acquisitions that may wait per key
 * @param order the order a key's waiters are served in
 * @param shares each priority's share of the permits (those given)
 * @param maximumKeys keys held at once
 * @param adaptive {@code none} (a fixed limit), {@code gradient} or {@code aimd}
 * @param minLimit an adaptive limit's floor
 * @param maxLimit an adaptive limit's ceiling
 * @param initialLimit an adaptive limit's start
 * @param codelTarget CoDel's target wait for each key's queue; null when CoDel is off
 * @param codelInterval CoDel's interval; null when CoDel is off
 * @param group the group the keys share; null when none
 * @param fair fair queuing among flows for the waiters; null when none
 */
public record ConcurrencySpec(String name, int limit, Duration lease, int maxWaiters,
    QueueOrder order, Map<Priority, Double> shares, long maximumKeys, String adaptive,
    int minLimit, int maxLimit, int initialLimit, Duration codelTarget, Duration codelInterval,
    ConcurrencyGroup group, FairQueuing fair) {
  /** The fields a concurrency limit may have. */
  public static final Set<String> FIELDS = Set.of("limit", "lease", "maxWaiters", "queueOrder",
      "shares", "maximumKeys", "adaptive", "minLimit", "maxLimit", "initialLimit", "codelTarget",
      "codelInterval", "group", "fair");
  /** The fields of a limit's {@code group}. */
  public static final Set<String> GROUP_FIELDS = Set.of("limit", "assured", "assuredKeys",
      "reserve", "key", "separator");

  /** The fields of a limit's {@code fair}. */
  public static final Set<String> FAIR_FIELDS = Set.of("queues", "handSize", "queueLength",
      "memory");
  /** Fair queuing's queues a priority when not given. */
  public static final int DEFAULT_FAIR_QUEUES = 1024;
  /** Fair queuing's hand size when not given. */
  public static final int DEFAULT_FAIR_HAND = 6;
  /** Fair queuing's waiters a queue when not given. */
  public static final int DEFAULT_FAIR_QUEUE_LENGTH = 100;

  /** A permit's lease when none is given. */
  public static final Duration DEFAULT_LEASE = ConcurrencyLimiter.DEFAULT_LEASE;
  /** Keys held at once when not given. */
  public static final long DEFAULT_MAXIMUM_KEYS = ConcurrencyLimiter.DEFAULT_MAXIMUM_KEYS;
  /** An adaptive limit's floor when not given. */
  public static final int DEFAULT_MIN_LIMIT = 1;
  /** An adaptive limit's ceiling when not given. */
  public static final int DEFAULT_MAX_LIMIT = 1000;
  /** An adaptive limit's start when not given. */
  public static final int DEFAULT_INITIAL_LIMIT = 20;
  /** A group's separator with {@code key: prefix} when not given. */
  public static final String DEFAULT_SEPARATOR = "/";

  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9_.-]{1,64}");
  private static final int MOST = 1_000_000;

  /** Checks what the record holds; {@link #parse} is the way from words. */
  public ConcurrencySpec {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(lease, "lease");
    Objects.requireNonNull(order, "order");
    shares = Map.copyOf(shares);
    Objects.requireNonNull(adaptive, "adaptive");
  }

  /**
   * A builder with these settings, less the store and what goes with it (failure policy, circuit
   * breaker), which the caller adds.
   */
  public ConcurrencyLimiter.Builder builder() {
    ConcurrencyLimiter.Builder b = ConcurrencyLimiter.builder().lease(lease)
        .maxWaiters(maxWaiters).queueOrder(order).maximumKeys(maximumKeys);
    if (!adaptive.equals("none")) {
      b.adaptive(AdaptiveLimit.named(adaptive, minLimit, maxLimit, initialLimit));
    } else if (limit > 0) {
      b.limit(limit);
    }
    if (group != null) {
      b.group(group);
    }
    shares.forEach(b::share);
    if (codelTarget != null) {
      b.codel(codelTarget, codelInterval);
    }
    if (fair != null) {
      b.fairQueuing(fair);
    }
    return b;
  }

  /**
   * A key's assured share from {@code assuredKeys}: the key as the limiter sees it, or, for a key
   * a rule built from a request ({@code x-tenant:acme/live}, {@code ip:192.0.2.1},
   * {@code user:alice}), the part after its source's name ({@code acme/live}), which is what a
   * user writes; else {@code assured}.
   *
   * @param assuredKeys key to its assured share
   * @param key the key as the limiter sees it
   * @param assured every other key's assured share
   * @return the key's assured share
   */
  public static int assuredOf(Map<String, Integer> assuredKeys, String key, int assured) {
    Integer named = assuredKeys.get(key);
    if (named == null) {
      int colon = key.indexOf(':');
      if (colon > 0) {
        named = assuredKeys.get(key.substring(colon + 1));
      }
    }
    return named == null ? assured : named;
  }

  /**
   * The concurrency limit {@code fields} describe, or null after reporting every problem found.
   *
   * @param name the limit's name
   * @param fields field to value, by the names of {@link #FIELDS} (others are reported)
   * @param spelling how a field's name is written in the caller's file, for the messages (the
   *     service writes {@code maxWaiters}, the starter {@code max-waiters}); a nested field comes
   *     as its path, {@code group.assuredKeys}
   * @param problems where problems go; a problem's field is the path of the field it is about
   *     ({@code maxWaiters}, {@code shares.normal}, {@code group.limit}), or null for the limit as
   *     a whole
   * @return the spec, or null when a problem was reported
   */
  public static ConcurrencySpec parse(String name, Map<String, ?> fields,
      UnaryOperator<String> spelling, Specs.Problems problems) {
    Reader r = new Reader(fields, "", spelling, problems);
    if (name == null || !NAME.matcher(name).matches()) {
      problems.report(null, "a concurrency limit's name must be 1 to 64 of A-Z a-z 0-9 _ . - but"
          + " was '" + name + "'");
      r.count++;
    }
    r.unknown(FIELDS);
    String adaptive = r.word("adaptive", "none", List.of("none", "gradient", "aimd"));
    boolean fixed = fields.get("limit") != null;
    int limit = fixed ? (int) r.whole("limit", 1, Integer.MAX_VALUE, 0) : 0;
    Duration lease = r.duration("lease", DEFAULT_LEASE);
    if (lease != null && (lease.toMillis() < 1 || lease.compareTo(Duration.ofDays(1)) > 0)) {
      r.report("lease", "must be between 1ms and 1d but was '" + show(fields.get("lease")) + "'");
    }
    int maxWaiters = (int) r.whole("maxWaiters", 0, MOST,
        ConcurrencyLimiter.DEFAULT_MAX_WAITERS);
    String orderWord = r.word("queueOrder", "fifo", List.of("fifo", "lifo"));
    QueueOrder order = "lifo".equals(orderWord) ? QueueOrder.LIFO : QueueOrder.FIFO;
    long maximumKeys = r.whole("maximumKeys", 1, 1_000_000_000, DEFAULT_MAXIMUM_KEYS);
    int minLimit = (int) r.whole("minLimit", 1, MOST, DEFAULT_MIN_LIMIT);
    int maxLimit = (int) r.whole("maxLimit", 1, MOST, DEFAULT_MAX_LIMIT);
    int initialLimit = (int) r.whole("initialLimit", 1, MOST, DEFAULT_INITIAL_LIMIT);
    Map<Priority, Double> shares = r.shares();
    Duration codelTarget = r.duration("codelTarget", null);
    Duration codelInterval = r.duration("codelInterval", null);
    boolean hasTarget = fields.get("codelTarget") != null;
    boolean hasInterval = fields.get("codelInterval") != null;
    if (hasTarget != hasInterval) {
      r.note(hasTarget ? "codelInterval" : "codelTarget", "CoDel needs both '"
          + r.spell("codelTarget") + "' and '" + r.spell("codelInterval")
          + "' (such as 5ms and 100ms)");
    } else if (codelTarget != null && codelInterval != null && (codelTarget.toNanos() <= 0
        || codelInterval.compareTo(codelTarget) < 0
        || codelInterval.compareTo(Duration.ofMinutes(1)) > 0)) {
      r.note("codelInterval", "CoDel needs 0 < " + r.spell("codelTarget") + " <= "
          + r.spell("codelInterval") + " <= 1m but " + r.spell("codelTarget") + " was '"
          + show(fields.get("codelTarget")) + "' and " + r.spell("codelInterval") + " '"
          + show(fields.get("codelInterval")) + "'");
    }
    Object groupValue = fields.get("group");
    ConcurrencyGroup group = null;
    if (groupValue != null) {
      if (!adaptive.equals("none")) {
        r.note("group", "adaptive limits and groups do not combine yet (a group's keys share"
            + " a fixed limit)");
      }
      group = r.group(groupValue);
    }
    Object fairValue = fields.get("fair");
    FairQueuing fair = fairValue == null ? null : r.fair(fairValue);
    if (adaptive.equals("none") && !fixed && groupValue == null) {
      r.report("limit", "is missing (the most permits in flight per key, or "
          + r.spell("adaptive") + ": gradient)");
    } else if (!adaptive.equals("none") && fixed) {
      r.note("limit", "'" + r.spell("limit") + "' and '" + r.spell("adaptive") + ": " + adaptive
          + "' exclude each other (bound an adaptive limit with " + r.spell("minLimit") + " and "
          + r.spell("maxLimit") + ")");
    }
    if (!adaptive.equals("none") && minLimit > maxLimit) {
      r.report("minLimit", "(" + minLimit + ") is above '" + r.spell("maxLimit") + "' ("
          + maxLimit + ")");
    } else if (!adaptive.equals("none") && r.count == 0) {
      try {
        // builds one limit, for the checks its builder makes (an initial limit out of bounds)
        var unused = AdaptiveLimit.named(adaptive, minLimit, maxLimit, initialLimit).get();
      } catch (IllegalArgumentException e) {
        r.note(null, e.getMessage());
      }
    }
    if (r.count > 0) {
      return null;
    }
    return new ConcurrencySpec(name, limit, lease, maxWaiters, order, shares, maximumKeys,
        adaptive, minLimit, maxLimit, initialLimit, codelTarget, codelInterval, group, fair);
  }

  /** A value as a message quotes it: a Duration in the words files use (30s, 250ms). */
  static String show(Object value) {
    if (!(value instanceof Duration d)) {
      return String.valueOf(value);
    }
    if (d.compareTo(Duration.ofDays(100_000)) > 0 || d.isNegative()) {
      return d.toString();
    }
    long nanos = d.toNanos();
    long[] units = {86_400_000_000_000L, 3_600_000_000_000L, 60_000_000_000L, 1_000_000_000L,
        1_000_000L};
    String[] names = {"d", "h", "m", "s", "ms"};
    for (int i = 0; i < units.length; i++) {
      if (nanos != 0 && nanos % units[i] == 0) {
        return nanos / units[i] + names[i];
      }
    }
    return nanos == 0 ? "0s" : nanos / 1e6 + "ms";
  }

  /** Reads fields, counting the problems it reports. */
  private static final class Reader {
    final Map<String, ?> fields;
    final String path;
    final UnaryOperator<String> spelling;
    final Specs.Problems problems;
    int count;

    Reader(Map<String, ?> fields, String path, UnaryOperator<String> spelling,
        Specs.Problems problems) {
      this.fields = fields;
      this.path = path;
      this.spelling = spelling;
      this.problems = problems;
    }

    String spell(String field) {
      return spelling.apply(path + field);
    }

    /** A problem with a field: the message follows the field's name. */
    void report(String field, String message) {
      count++;
      String where = field == null ? null : path + field;
      problems.report(where, field == null ? message : "'" + spelling.apply(where) + "' "
          + message);
    }

    /** A problem found at a field, in a message of its own. */
    void note(String field, String message) {
      count++;
      problems.report(field == null ? null : path + field, message);
    }

    void unknown(Set<String> known) {
      for (String k : fields.keySet()) {
        if (!known.contains(k)) {
          List<String> expected = new ArrayList<>();
          for (String f : new TreeSet<>(known)) {
            expected.add(spelling.apply(path + f));
          }
          count++;
          problems.report(path + k, "unknown key '" + spelling.apply(path + k)
              + "' (expected one of " + String.join(", ", expected) + ")");
        }
      }
    }

    /** A whole number from min to max, the default when absent, or min after a problem. */
    long whole(String field, long min, long max, long absent) {
      Object v = fields.get(field);
      if (v == null) {
        return absent;
      }
      double n;
      if (v instanceof Number number) {
        n = number.doubleValue();
      } else {
        try {
          n = Double.parseDouble(v.toString().trim());
        } catch (NumberFormatException e) {
          n = Double.NaN;
        }
      }
      if (!(n == Math.rint(n) && n >= min && n <= max)) {
        report(field, "must be a whole number from " + min + " to " + max + " but was '" + v
            + "'");
        return min;
      }
      return (long) n;
    }

    /** A duration: a Duration, or words such as 30s; the default when absent; null after a problem. */
    Duration duration(String field, Duration absent) {
      Object v = fields.get(field);
      if (v == null) {
        return absent;
      }
      if (v instanceof Duration d) {
        return d;
      }
      Duration d = Specs.parseDuration(v.toString().trim());
      if (d == null) {
        report(field, "must be a duration such as 250ms, 30s, 5m, 1h or 1d but was '" + v + "'");
      }
      return d;
    }

    /** One of the words (any case), the default when absent, or the default after a problem. */
    String word(String field, String absent, List<String> words) {
      Object v = fields.get(field);
      if (v == null) {
        return absent;
      }
      String w = v.toString().trim().toLowerCase(Locale.ROOT);
      if (!words.contains(w)) {
        report(field, "must be " + String.join(", ", words.subList(0, words.size() - 1))
            + " or " + words.get(words.size() - 1) + " but was '" + v + "'");
        return absent;
      }
      return w;
    }

    Map<String, ?> map(String field, String example) {
      Object v = fields.get(field);
      if (v == null) {
        return Map.of();
      }
      if (!(v instanceof Map<?, ?> m)) {
        report(field, "must be a mapping such as " + example);
        return null;
      }
      Map<String, Object> out = new LinkedHashMap<>();
      m.forEach((k, x) -> out.put(String.valueOf(k), x));
      return out;
    }

    Map<Priority, Double> shares() {
      Map<String, ?> given = map("shares", "{normal: 0.8, sheddable: 0.5}");
      Map<Priority, Double> shares = new EnumMap<>(Priority.class);
      if (given == null) {
        return shares;
      }
      given.forEach((p, v) -> {
        Priority priority = switch (p.trim().toLowerCase(Locale.ROOT)) {
          case "critical" -> Priority.CRITICAL;
          case "normal" -> Priority.NORMAL;
          case "sheddable" -> Priority.SHEDDABLE;
          default -> null;
        };
        String field = "shares." + p;
        double share = Double.NaN;
        if (v instanceof Number n) {
          share = n.doubleValue();
        } else if (v != null) {
          try {
            share = Double.parseDouble(v.toString().trim());
          } catch (NumberFormatException e) {
            share = Double.NaN;
          }
        }
        if (priority == null) {
          note(field, "unknown priority '" + p + "' (expected critical, normal or sheddable)");
        } else if (!(share >= 0 && share <= 1)) {
          note(field, "the share of " + p + " must be between 0 and 1 but was '" + v + "'");
        } else {
          shares.put(priority, share);
        }
      });
      double above = 1;
      for (Priority p : Priority.values()) {
        double share = shares.getOrDefault(p, 1.0);
        if (share > above) {
          report("shares." + p.name().toLowerCase(Locale.ROOT), "(" + share + ") is above a"
              + " higher priority's share (" + above + "): a lower priority may not use more of"
              + " the permits");
        }
        above = Math.min(above, share);
      }
      return Collections.unmodifiableMap(shares);
    }

    FairQueuing fair(Object value) {
      if (!(value instanceof Map<?, ?> m)) {
        report("fair", "must be a mapping such as {queues: 1024, handSize: 6, queueLength: 100,"
            + " memory: 10s}");
        return null;
      }
      Map<String, Object> fields = new LinkedHashMap<>();
      m.forEach((k, x) -> fields.put(String.valueOf(k), x));
      Reader f = new Reader(fields, path + "fair.", spelling, problems);
      f.unknown(FAIR_FIELDS);
      int queues = (int) f.whole("queues", 1, FairQueuing.MAX_QUEUES, DEFAULT_FAIR_QUEUES);
      int hand = (int) f.whole("handSize", 1, FairQueuing.MAX_HAND,
          Math.min(DEFAULT_FAIR_HAND, queues));
      int length = (int) f.whole("queueLength", 1, MOST, DEFAULT_FAIR_QUEUE_LENGTH);
      Duration memory = f.duration("memory", FairQueuing.DEFAULT_MEMORY);
      if (hand > queues) {
        f.report("handSize", "(" + hand + ") is above '" + f.spell("queues") + "' (" + queues
            + ")");
      }
      if (memory != null && (memory.toMillis() < 1 || memory.compareTo(Duration.ofDays(1)) > 0)) {
        f.report("memory", "must be between 1ms and 1d but was '" + show(fields.get("memory"))
            + "'");
      }
      count += f.count;
      if (f.count > 0) {
        return null;
      }
      return FairQueuing.of(queues, hand, length).withMemory(memory);
    }

    ConcurrencyGroup group(Object value) {
      if (!(value instanceof Map<?, ?> m)) {
        report("group", "must be a mapping such as {limit: 100, assured: 10, key: prefix}");
        return null;
      }
      Map<String, Object> fields = new LinkedHashMap<>();
      m.forEach((k, x) -> fields.put(String.valueOf(k), x));
      Reader g = new Reader(fields, path + "group.", spelling, problems);
      g.unknown(GROUP_FIELDS);
      if (fields.get("limit") == null) {
        g.report("limit", "is missing (the permits in flight the group's keys hold at most,"
            + " together)");
        count += g.count;
        return null;
      }
      long limit = g.whole("limit", 1, MOST, 1);
      long assured = g.whole("assured", 0, limit, 0);
      long reserve = g.whole("reserve", 0, limit, -1);
      String key = g.word("key", "all", List.of("all", "prefix"));
      Object sep = fields.get("separator");
      String separator = sep == null ? DEFAULT_SEPARATOR : sep.toString();
      if (sep != null && separator.isEmpty()) {
        g.report("separator", "must not be empty");
      } else if (sep != null && !key.equals("prefix")) {
        g.report("separator", "applies with '" + g.spell("key") + ": prefix'");
      }
      Map<String, ?> named = g.map("assuredKeys", "{acme: 20}");
      Map<String, Integer> assuredKeys = new LinkedHashMap<>();
      if (named != null) {
        Reader k = new Reader(named, path + "group.assuredKeys.", spelling, problems);
        for (String n : named.keySet()) {
          assuredKeys.put(n, (int) k.whole(n, 0, limit, 0));
        }
        g.count += k.count;
      }
      count += g.count;
      if (g.count > 0) {
        return null;
      }
      int everyKey = (int) assured;
      Map<String, Integer> shares = Map.copyOf(assuredKeys);
      ConcurrencyGroup group = ConcurrencyGroup.sharing((int) limit)
          .assured(k -> assuredOf(shares, k, everyKey));
      if (reserve >= 0) {
        group = group.reserve((int) reserve);
      }
      return key.equals("prefix") ? group.byPrefix(separator) : group;
    }
  }
}
