package dev.sluice.spring;

import dev.sluice.LimiterStats;
import dev.sluice.TopKeys;
import dev.sluice.concurrency.ConcurrencyLimiter;
import dev.sluice.console.ConsoleAssets;
import dev.sluice.console.ConsoleHistory;
import dev.sluice.console.ConsoleSource;
import dev.sluice.quota.QuotaStore;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;
import org.springframework.boot.actuate.endpoint.web.annotation.WebEndpoint;
import org.springframework.util.MimeType;

/**
 * Actuator's {@code sluiceconsole} endpoint (docs/spring.md, "The console"): the service's console
 * page at {@code /actuator/sluiceconsole/index.html}, its assets beside it, and its document at
 * {@code /actuator/sluiceconsole}: each policy's decisions per second (from Sluice's meters), the
 * keys each policy refused most, the concurrency limits, the quotas. Behind Actuator's exposure
 * and the application's security, as every Actuator endpoint; quotas change through {@link
 * SluiceQuotasEndpoint}.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/spring.md#the-console-sluiceconsole">docs/spring.md, "The console (sluice.console)"</a>.
 */
@WebEndpoint(id = "sluiceconsole")
public class SluiceConsoleEndpoint implements ConsoleSource, AutoCloseable {
  private static final Log LOG = LogFactory.getLog(SluiceConsoleEndpoint.class);
  /** Keys each policy's sketch holds. */
  static final int TOP_KEYS = 256;
  /** How long a refusal counts: it decays by e every this long. */
  static final Duration TOP_MEMORY = Duration.ofMinutes(5);
  private static final ConsoleAssets.Settings SETTINGS =
      new ConsoleAssets.Settings("../sluiceconsole", "../sluicequotas", false, true);

  private final SluiceLimiters limiters;
  private final MeterRegistry meters;
  private final Supplier<String> instance;
  private final ConsoleHistory history;
  private final ScheduledExecutorService sampler;
  private final byte[] page = ConsoleAssets.page(SETTINGS);

  SluiceConsoleEndpoint(SluiceLimiters limiters, MeterRegistry meters, Supplier<String> instance) {
    this.limiters = limiters;
    this.meters = meters;
    this.instance = instance;
    this.history = new ConsoleHistory(this, System::currentTimeMillis);
    this.sampler = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "sluice-console-sample");
      t.setDaemon(true);
      return t;
    });
    // a sample that throws would end the schedule: a failed one is skipped
    var unused = sampler.scheduleAtFixedRate(() -> {
      try {
        history.sample();
      } catch (RuntimeException e) {
        LOG.debug("a console sample failed", e);
      }
    }, 0, 1, TimeUnit.SECONDS);
  }

  /** The console's document. */
  @ReadOperation(produces = "application/json")
  public Map<String, Object> document() {
    return history.document();
  }

  /** The page ({@code index.html}) and its assets; 404 for any other name. */
  @ReadOperation(produces = {"text/html", "text/javascript", "text/css", "image/svg+xml"})
  public WebEndpointResponse<byte[]> asset(@Selector String name) {
    if (!ConsoleAssets.isAsset(name)) {
      return new WebEndpointResponse<>(WebEndpointResponse.STATUS_NOT_FOUND);
    }
    byte[] body = name.equals("index.html") ? page.clone() : ConsoleAssets.asset(name);
    return new WebEndpointResponse<>(body, 200,
        MimeType.valueOf(ConsoleAssets.contentType(name)));
  }

  @Override
  public void close() {
    sampler.shutdownNow();
  }

  @Override
  public String instance() {
    return instance.get();
  }

  @Override
  public List<String> policies() {
    return new ArrayList<>(limiters.all().keySet());
  }

  /** From Sluice's meters ({@code sluice.decisions}): allowed and rejected; 0 without them. */
  @Override
  public long decisions(String policy, String outcome) {
    if (meters == null) {
      return 0;
    }
    double sum = 0;
    for (Counter c : meters.find("sluice.decisions").tag("limiter", policy)
        .tag("outcome", outcome).counters()) {
      sum += c.count();
    }
    return (long) sum;
  }

  @Override
  public LimiterStats stats(String policy) {
    return limiters.get(policy).stats();
  }

  @Override
  public boolean leased(String policy) {
    return false;
  }

  @Override
  public TopKeys refused(String policy) {
    return limiters.refused.get(policy);
  }

  @Override
  public Map<String, ConcurrencyLimiter> limits() {
    return limiters.allConcurrency();
  }

  @Override
  public List<String> keys(String limit) {
    return List.of(SluiceAutoConfiguration.sharedKeys(limiters.settings.concurrency, limit));
  }

  @Override
  public TopKeys refusedPermits(String limit) {
    return null;
  }

  @Override
  public QuotaStore quotas() {
    return limiters.quotaStore().orElse(null);
  }
}
