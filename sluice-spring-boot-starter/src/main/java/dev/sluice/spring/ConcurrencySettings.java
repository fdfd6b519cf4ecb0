package dev.sluice.spring;

import dev.sluice.concurrency.ConcurrencySpec;
import dev.sluice.concurrency.Priority;
import dev.sluice.http.ConcurrencyScope;
import dev.sluice.internal.FilterPolicy;
import dev.sluice.internal.RequestKeys;
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

/**
 * {@code sluice.concurrency.*} checked and turned into Sluice's model; every problem is added to
 * the list {@link SluiceSettings} throws, named by its property.
 */
final class ConcurrencySettings {
  /** A checked rule. */
  record RuleSpec(String path, List<String> methods, String limit, ConcurrencyScope scope,
      SluiceSettings.KeySource key, SluiceSettings.KeySource flow, Duration maxWait,
      List<String> deadlineHeaders, String priorityHeader, Duration retryAfter) {

    /** The priority a header value names (critical, normal, sheddable; else normal). */
    static Priority priority(String headerValue) {
      return FilterPolicy.priorityNamed(headerValue);
    }
  }

  final Map<String, ConcurrencySpec> limits;
  final List<RuleSpec> rules;

  private ConcurrencySettings(Map<String, ConcurrencySpec> limits, List<RuleSpec> rules) {
    this.limits = limits;
    this.rules = rules;
  }

  static ConcurrencySettings of(SluiceProperties.Concurrency c, List<String> problems) {
    Map<String, ConcurrencySpec> limits = new LinkedHashMap<>();
    c.getLimits().forEach((name, l) -> {
      ConcurrencySpec spec = limit("sluice.concurrency.limits." + name, name, l, problems);
      if (spec != null) {
        limits.put(name, spec);
      }
    });
    Set<String> fair = new HashSet<>();
    c.getLimits().forEach((name, l) -> {
      if (l.getFair() != null) {
        fair.add(name);
      }
    });
    List<RuleSpec> rules = new ArrayList<>();
    for (int i = 0; i < c.getRules().size(); i++) {
      RuleSpec r = rule("sluice.concurrency.rules[" + i + "]", c.getRules().get(i),
          c.getLimits().keySet(), fair, problems);
      if (r != null) {
        rules.add(r);
      }
    }
    return new ConcurrencySettings(Collections.unmodifiableMap(limits), List.copyOf(rules));
  }

  /**
   * A limit's properties, read by {@link ConcurrencySpec} (the service reads its files through it
   * too): the same fields, defaults and problems, named here by their properties' spelling.
   */
  private static ConcurrencySpec limit(String at, String name, SluiceProperties.ConcurrencyLimit l,
      List<String> problems) {
    Map<String, Object> fields = new LinkedHashMap<>();
    fields.put("limit", l.getLimit());
    fields.put("lease", l.getLease());
    fields.put("maxWaiters", l.getMaxWaiters());
    fields.put("queueOrder", l.getQueueOrder());
    fields.put("shares", l.getShares());
    fields.put("maximumKeys", l.getMaximumKeys());
    fields.put("adaptive", l.getAdaptive());
    fields.put("minLimit", l.getMinLimit());
    fields.put("maxLimit", l.getMaxLimit());
    fields.put("initialLimit", l.getInitialLimit());
    fields.put("codelTarget", l.getCodelTarget());
    fields.put("codelInterval", l.getCodelInterval());
    SluiceProperties.ConcurrencyGroupSettings g = l.getGroup();
    if (g != null) {
      Map<String, Object> group = new LinkedHashMap<>();
      group.put("limit", g.getLimit());
      group.put("assured", g.getAssured());
      group.put("assuredKeys", g.getAssuredKeys());
      group.put("reserve", g.getReserve());
      group.put("key", g.getKey());
      group.put("separator", g.getSeparator());
      group.values().removeIf(v -> v == null);
      fields.put("group", group);
    }
    SluiceProperties.FairSettings f = l.getFair();
    if (f != null) {
      Map<String, Object> fair = new LinkedHashMap<>();
      fair.put("queues", f.getQueues());
      fair.put("handSize", f.getHandSize());
      fair.put("queueLength", f.getQueueLength());
      fair.put("memory", f.getMemory());
      fair.values().removeIf(v -> v == null);
      fields.put("fair", fair);
    }
    fields.values().removeIf(v -> v == null);
    return ConcurrencySpec.parse(name, fields, ConcurrencySettings::kebab,
        (field, message) -> problems.add(at + ": " + message));
  }

  /**
   * A field's path as a property names it: {@code group.assuredKeys} is
   * {@code group.assured-keys}; the keys under assured-keys and shares stay as written.
   */
  static String kebab(String path) {
    String[] parts = path.split("\\.", -1);
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < parts.length; i++) {
      boolean field = i == 0 || (i == 1 && (parts[0].equals("group") || parts[0].equals("fair")));
      if (i > 0) {
        out.append('.');
      }
      out.append(field ? parts[i].replaceAll("([a-z])([A-Z])", "$1-$2").toLowerCase(Locale.ROOT)
          : parts[i]);
    }
    return out.toString();
  }

  private static RuleSpec rule(String at, SluiceProperties.ConcurrencyRule r,
      Set<String> declared, Set<String> fair, List<String> problems) {
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
    SluiceSettings.KeySource flow = r.getFlow() == null ? null
        : SluiceSettings.key(at + ".flow", r.getFlow(), problems);
    if (flow != null && limit != null && fair != null && !fair.contains(limit)) {
      problems.add(at + ".flow: the limit '" + limit + "' has no fair queuing (set"
          + " sluice.concurrency.limits." + limit + ".fair) to serve its waiters fairly by flow");
    }
    return problems.size() == before ? new RuleSpec(path, List.copyOf(methods), limit, scope, key,
        flow, wait, List.copyOf(deadlineHeaders), priorityHeader, retryAfter) : null;
  }

  private static String lower(String s) {
    return s == null ? "" : s.trim().toLowerCase(Locale.ROOT);
  }
}
