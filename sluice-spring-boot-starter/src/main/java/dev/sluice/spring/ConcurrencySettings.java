package dev.sluice.spring;

import dev.sluice.concurrency.AdaptiveLimit;
import dev.sluice.concurrency.ConcurrencyGroup;
import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.concurrency.Priority;
import dev.sluice.concurrency.QueueOrder;
import dev.sluice.http.ConcurrencyScope;
import dev.sluice.http.RequestKeys;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;

/**
 * {@code sluice.concurrency.*} checked and turned into Sluice's model; every problem is added to
 * the list {@link SluiceSettings} throws, named by its property.
 */
final class ConcurrencySettings {
  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9_.-]{1,64}");

  /** A checked limit: the builder's settings, less the store. */
  record LimitSpec(String name, int limit, Duration lease, int maxWaiters, QueueOrder order,
      Map<Priority, Double> shares, long maximumKeys, String adaptive, int minLimit,
      int maxLimit, int initialLimit, Duration codelTarget, Duration codelInterval,
      ConcurrencyGroup group) {
    /** A builder with these settings. */
    ConcurrencyLimiter.Builder builder() {
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
      return b;
    }
  }

  /** A checked rule. */
  record RuleSpec(String path, List<String> methods, String limit, ConcurrencyScope scope,
      SluiceSettings.KeySource key, Duration maxWait, List<String> deadlineHeaders,
      String priorityHeader, Duration retryAfter) {

    /** The priority a header value names (critical, normal, sheddable; else normal). */
    static Priority priority(String headerValue) {
      if (headerValue == null) {
        return Priority.NORMAL;
      }
      return switch (headerValue.trim().toLowerCase(Locale.ROOT)) {
        case "critical" -> Priority.CRITICAL;
        case "sheddable" -> Priority.SHEDDABLE;
        default -> Priority.NORMAL;
      };
    }
  }

  final Map<String, LimitSpec> limits;
  final List<RuleSpec> rules;

  private ConcurrencySettings(Map<String, LimitSpec> limits, List<RuleSpec> rules) {
    this.limits = limits;
    this.rules = rules;
  }

  static ConcurrencySettings of(SluiceProperties.Concurrency c, List<String> problems) {
    Map<String, LimitSpec> limits = new LinkedHashMap<>();
    c.getLimits().forEach((name, l) -> {
      LimitSpec spec = limit("sluice.concurrency.limits." + name, name, l, problems);
      if (spec != null) {
        limits.put(name, spec);
      }
    });
    List<RuleSpec> rules = new ArrayList<>();
    for (int i = 0; i < c.getRules().size(); i++) {
      RuleSpec r = rule("sluice.concurrency.rules[" + i + "]", c.getRules().get(i),
          c.getLimits().keySet(), problems);
      if (r != null) {
        rules.add(r);
      }
    }
    return new ConcurrencySettings(Collections.unmodifiableMap(limits), List.copyOf(rules));
  }

  private static LimitSpec limit(String at, String name, SluiceProperties.ConcurrencyLimit l,
      List<String> problems) {
    int before = problems.size();
    if (!NAME.matcher(name).matches()) {
      problems.add(at + ": a limit name must be 1 to 64 of A-Z a-z 0-9 _ . - but was '" + name
          + "'");
      return null;
    }
    String adaptive = lower(l.getAdaptive());
    if (!List.of("none", "gradient", "aimd").contains(adaptive)) {
      problems.add(at + ".adaptive: must be none, gradient or aimd but was '" + l.getAdaptive()
          + "'");
    } else if (!adaptive.equals("none")) {
      if (l.getMinLimit() < 1 || l.getMinLimit() > l.getMaxLimit()) {
        problems.add(at + ".min-limit: must be from 1 to max-limit (" + l.getMaxLimit()
            + ") but was " + l.getMinLimit());
      }
      if (l.getMaxLimit() < 1 || l.getMaxLimit() > 1_000_000) {
        problems.add(at + ".max-limit: must be from 1 to 1000000 but was " + l.getMaxLimit());
      }
      if (l.getInitialLimit() < 1) {
        problems.add(at + ".initial-limit: must be at least 1 but was " + l.getInitialLimit());
      }
      if (l.getLimit() != null) {
        problems.add(at + ".limit: a fixed limit and adaptive: " + adaptive + " exclude each"
            + " other (bound an adaptive limit with min-limit and max-limit)");
      }
    } else if (l.getLimit() == null && l.getGroup() == null) {
      problems.add(at + ".limit: is missing (the most requests in flight per key, or set"
          + " adaptive: gradient)");
    } else if (l.getLimit() != null && l.getLimit() < 1) {
      problems.add(at + ".limit: must be at least 1 but was " + l.getLimit());
    }
    Duration lease = l.getLease();
    if (lease == null || lease.toMillis() < 1 || lease.compareTo(Duration.ofDays(1)) > 0) {
      problems.add(at + ".lease: must be between 1ms and 1d but was " + lease);
    }
    if (l.getMaxWaiters() < 0 || l.getMaxWaiters() > 1_000_000) {
      problems.add(at + ".max-waiters: must be from 0 to 1000000 but was " + l.getMaxWaiters());
    }
    if (l.getMaximumKeys() < 1 || l.getMaximumKeys() > 1_000_000_000L) {
      problems.add(at + ".maximum-keys: must be from 1 to 1000000000 but was "
          + l.getMaximumKeys());
    }
    QueueOrder order = switch (lower(l.getQueueOrder())) {
      case "fifo" -> QueueOrder.FIFO;
      case "lifo" -> QueueOrder.LIFO;
      default -> {
        problems.add(at + ".queue-order: must be fifo or lifo but was '" + l.getQueueOrder()
            + "'");
        yield null;
      }
    };
    Map<Priority, Double> shares = new EnumMap<>(Priority.class);
    l.getShares().forEach((priority, share) -> {
      Priority p = switch (lower(priority)) {
        case "critical" -> Priority.CRITICAL;
        case "normal" -> Priority.NORMAL;
        case "sheddable" -> Priority.SHEDDABLE;
        default -> null;
      };
      if (p == null) {
        problems.add(at + ".shares." + priority + ": must be critical, normal or sheddable");
      } else if (share == null || !(share >= 0 && share <= 1)) {
        problems.add(at + ".shares." + priority + ": must be between 0 and 1 but was " + share);
      } else {
        shares.put(p, share);
      }
    });
    double above = 1;
    for (Priority p : Priority.values()) {
      double share = shares.getOrDefault(p, 1.0);
      if (share > above) {
        problems.add(at + ".shares." + p.name().toLowerCase(Locale.ROOT) + ": " + share
            + " is above a higher priority's share (" + above + "): a lower priority may not use"
            + " more of the permits");
      }
      above = Math.min(above, share);
    }
    Duration codelTarget = l.getCodelTarget();
    Duration codelInterval = l.getCodelInterval();
    if ((codelTarget == null) != (codelInterval == null)) {
      problems.add(at + (codelTarget == null ? ".codel-target" : ".codel-interval")
          + ": is missing (CoDel needs codel-target and codel-interval, such as 5ms and 100ms)");
    } else if (codelTarget != null && (codelTarget.toNanos() <= 0
        || codelInterval.compareTo(codelTarget) < 0
        || codelInterval.compareTo(Duration.ofMinutes(1)) > 0)) {
      problems.add(at + ".codel-interval: CoDel needs 0 < codel-target <= codel-interval <= 1m"
          + " but codel-target was " + codelTarget + " and codel-interval " + codelInterval);
    }
    ConcurrencyGroup group = l.getGroup() == null ? null
        : group(at + ".group", l.getGroup(), !adaptive.equals("none"), problems);
    return problems.size() == before ? new LimitSpec(name,
        l.getLimit() == null ? 0 : l.getLimit(), lease, l.getMaxWaiters(), order,
        Map.copyOf(shares), l.getMaximumKeys(), adaptive, l.getMinLimit(), l.getMaxLimit(),
        l.getInitialLimit(), codelTarget, codelInterval, group) : null;
  }

  /**
   * A key's assured share from {@code assured-keys}: the key as the limiter sees it, or, for a key
   * a rule built from a request ({@code x-tenant:acme/live}, {@code ip:192.0.2.1},
   * {@code user:alice}), the part after its source's name ({@code acme/live}), which is what a user
   * writes; else the group's {@code assured}.
   */
  static int assuredOf(Map<String, Integer> assuredKeys, String key, int assured) {
    Integer named = assuredKeys.get(key);
    if (named == null) {
      int colon = key.indexOf(':');
      if (colon > 0) {
        named = assuredKeys.get(key.substring(colon + 1));
      }
    }
    return named == null ? assured : named;
  }

  /** A limit's group, checked; null (and problems) when it cannot be built. */
  private static ConcurrencyGroup group(String at, SluiceProperties.ConcurrencyGroupSettings g,
      boolean adaptive, List<String> problems) {
    int before = problems.size();
    if (adaptive) {
      problems.add(at + ": adaptive limits and groups do not combine yet (a group's keys share"
          + " a fixed limit)");
    }
    Integer limit = g.getLimit();
    if (limit == null || limit < 1) {
      problems.add(at + ".limit: " + (limit == null ? "is missing (the permits in flight the"
          + " group's keys hold at most, together)" : "must be at least 1 but was " + limit));
      return null;
    }
    if (g.getAssured() < 0 || g.getAssured() > limit) {
      problems.add(at + ".assured: must be from 0 to the group's limit (" + limit + ") but was "
          + g.getAssured());
    }
    Map<String, Integer> named = g.getAssuredKeys() == null ? Map.of() : g.getAssuredKeys();
    named.forEach((key, a) -> {
      if (a == null || a < 0 || a > limit) {
        problems.add(at + ".assured-keys." + key + ": must be from 0 to the group's limit ("
            + limit + ") but was " + a);
      }
    });
    Integer reserve = g.getReserve();
    if (reserve != null && (reserve < 0 || reserve > limit)) {
      problems.add(at + ".reserve: must be from 0 to the group's limit (" + limit + ") but was "
          + reserve);
    }
    String key = lower(g.getKey());
    if (!key.equals("all") && !key.equals("prefix")) {
      problems.add(at + ".key: must be all or prefix but was '" + g.getKey() + "'");
    } else if (key.equals("prefix") && (g.getSeparator() == null || g.getSeparator().isEmpty())) {
      problems.add(at + ".separator: must not be empty with key: prefix");
    }
    if (problems.size() != before) {
      return null;
    }
    int assured = g.getAssured();
    Map<String, Integer> assuredKeys = Map.copyOf(named);
    ConcurrencyGroup group = ConcurrencyGroup.sharing(limit)
        .assured(k -> assuredOf(assuredKeys, k, assured));
    if (reserve != null) {
      group = group.reserve(reserve);
    }
    return key.equals("prefix") ? group.byPrefix(g.getSeparator()) : group;
  }

  private static RuleSpec rule(String at, SluiceProperties.ConcurrencyRule r,
      Set<String> declared, List<String> problems) {
    int before = problems.size();
    String path = r.getPath();
    SluiceSettings.checkPath(at, path, problems);
    List<String> methods = SluiceSettings.methods(at, r.getMethods(), problems);
    String limit = r.getLimit();
    if (limit == null) {
      problems.add(at + ".limit: is missing (one of " + new TreeSet<>(declared) + ")");
    } else if (!declared.contains(limit)) {
      problems.add(at + ".limit: no limit '" + limit + "' under sluice.concurrency.limits (there"
          + " are " + new TreeSet<>(declared) + ")");
    }
    ConcurrencyScope scope = switch (lower(r.getPer())) {
      case "client" -> ConcurrencyScope.CLIENT;
      case "route" -> ConcurrencyScope.ROUTE;
      case "global" -> ConcurrencyScope.GLOBAL;
      default -> {
        problems.add(at + ".per: must be client, route or global but was '" + r.getPer() + "'");
        yield null;
      }
    };
    SluiceSettings.KeySource key = SluiceSettings.key(at + ".key", r.getKey(), problems);
    Duration wait = r.getMaxWait();
    if (wait == null || wait.isNegative() || wait.compareTo(Duration.ofMinutes(1)) > 0) {
      problems.add(at + ".max-wait: must be between 0 and 1m but was " + wait);
    }
    Duration retryAfter = r.getRetryAfter();
    if (retryAfter == null || retryAfter.toMillis() < 1
        || retryAfter.compareTo(Duration.ofDays(1)) > 0) {
      problems.add(at + ".retry-after: must be between 1ms and 1d but was " + retryAfter);
    }
    String priorityHeader = r.getPriorityHeader();
    if (priorityHeader != null) {
      try {
        RequestKeys.headerName(priorityHeader.trim());
        priorityHeader = priorityHeader.trim();
      } catch (IllegalArgumentException e) {
        problems.add(at + ".priority-header: " + e.getMessage());
      }
    }
    List<String> deadlineHeaders = new ArrayList<>();
    List<String> written = r.getDeadlineHeaders() == null ? List.of() : r.getDeadlineHeaders();
    for (int i = 0; i < written.size(); i++) {
      String h = written.get(i);
      try {
        deadlineHeaders.add(RequestKeys.headerName(h == null ? null : h.trim()));
      } catch (IllegalArgumentException e) {
        problems.add(at + ".deadline-headers[" + i + "]: " + e.getMessage());
      }
    }
    return problems.size() == before ? new RuleSpec(path, List.copyOf(methods), limit, scope, key,
        wait, List.copyOf(deadlineHeaders), priorityHeader, retryAfter) : null;
  }

  private static String lower(String s) {
    return s == null ? "" : s.trim().toLowerCase(Locale.ROOT);
  }
}
