package dev.sluice.server;

import dev.sluice.LimiterStats;
import dev.sluice.TopKeys;
import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.console.ConsoleAssets;
import dev.sluice.console.ConsoleHistory;
import dev.sluice.console.ConsoleSource;
import dev.sluice.quota.QuotaStore;
import java.util.List;
import java.util.Map;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.eclipse.jetty.http.HttpHeader;

/**
 * The console (docs/server.md, "The console"): its page at {@code /console/} (assets from
 * {@code sluice-console}, under a content security policy) and {@code GET /v1/console}, the
 * document it reads ({@link ConsoleHistory}), from the service's counters, policies, concurrency
 * limits and quotas. The page is static and holds no data; the document is behind the admin
 * token (the Router checks it), as the quotas the page changes are.
 */
final class Console implements ConsoleSource {
  /** The page's settings: the service's API, with the admin token. */
  private static final ConsoleAssets.Settings SETTINGS =
      new ConsoleAssets.Settings("../v1/console", "../v1/quotas", true, false);
  private static final byte[] PAGE = ConsoleAssets.page(SETTINGS);

  private final Metrics metrics;
  private final PolicyRegistry registry;
  private final Map<String, ConcurrencyLimiter> limiters;
  private final PermitEndpoint permits;
  private final QuotaStore quotas;
  private final Responses responses;
  private final Supplier<String> instance;
  private final ConsoleHistory history;

  Console(Metrics metrics, PolicyRegistry registry, Map<String, ConcurrencyLimiter> limiters,
      PermitEndpoint permits, QuotaStore quotas, Responses responses, Supplier<String> instance,
      LongSupplier epochMillis) {
    this.metrics = metrics;
    this.registry = registry;
    this.limiters = limiters;
    this.permits = permits;
    this.quotas = quotas;
    this.responses = responses;
    this.instance = instance;
    this.history = new ConsoleHistory(this, epochMillis);
  }

  /** The asset {@code path} names ({@code /console/} is the page), or null. */
  static String asset(String path) {
    if (path.equals("/console/")) {
      return "index.html";
    }
    if (path.startsWith("/console/")) {
      String name = path.substring("/console/".length());
      return ConsoleAssets.isAsset(name) && !name.equals("index.html") ? name : null;
    }
    return null;
  }

  /** Sends one of the page's assets, with headers that keep it to itself. */
  void asset(Exchange x, String name) {
    if (x.claim()) {
      x.response.getHeaders().put("Content-Security-Policy",
          ConsoleAssets.CONTENT_SECURITY_POLICY);
      x.response.getHeaders().put("X-Content-Type-Options", "nosniff");
      x.response.getHeaders().put("Referrer-Policy", "no-referrer");
      x.response.getHeaders().put(HttpHeader.CACHE_CONTROL, "no-cache");
      responses.send(x, 200, ConsoleAssets.contentType(name), name.equals("index.html") ? PAGE
          : ConsoleAssets.asset(name));
    }
  }

  /** Takes one sample of the history (the service's scheduler calls it once a second). */
  void sample() {
    history.sample();
  }

  /** {@code GET /v1/console}: everything the page shows, as one JSON document. */
  void snapshot(Exchange x) {
    Map<String, Object> d = history.document();
    responses.json(x, 200, "application/json", g -> g.writeObject(d));
  }

  @Override
  public String instance() {
    return instance.get();
  }

  @Override
  public List<String> policies() {
    return registry.names();
  }

  @Override
  public long decisions(String policy, String outcome) {
    return metrics.decisions(policy, outcome);
  }

  @Override
  public LimiterStats stats(String policy) {
    PolicyRegistry.Policy p = registry.get(policy);
    return p == null ? null : p.limiter().stats();
  }

  @Override
  public boolean leased(String policy) {
    PolicyRegistry.Policy p = registry.get(policy);
    return p != null && p.leased();
  }

  @Override
  public TopKeys refused(String policy) {
    return metrics.topRefused(policy, false);
  }

  @Override
  public Map<String, ConcurrencyLimiter> limits() {
    return limiters;
  }

  @Override
  public List<String> keys(String limit) {
    return permits.meteredKeys(limit);
  }

  @Override
  public TopKeys refusedPermits(String limit) {
    return metrics.topRefused(limit, true);
  }

  @Override
  public QuotaStore quotas() {
    return quotas;
  }
}
