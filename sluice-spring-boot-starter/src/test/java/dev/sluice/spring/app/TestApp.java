package dev.sluice.spring.app;

import dev.sluice.spring.ConcurrencyLimited;
import dev.sluice.spring.RateLimited;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.web.embedded.netty.NettyReactiveWebServerFactory;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.stereotype.Service;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/** The application the starter's tests start, as Spring MVC on Tomcat or WebFlux on Netty. */
@SpringBootApplication
public class TestApp {
  /** What the application's own health signal, {@code test-load}, reads. */
  public static final java.util.concurrent.atomic.AtomicReference<Double> LOAD =
      new java.util.concurrent.atomic.AtomicReference<>(0.0);

  /** A signal of the application's own, for {@code sluice.health.signals[*].signal: test-load}. */
  @Bean
  dev.sluice.health.HealthSignal testLoad() {
    return dev.sluice.health.HealthSignal.of("test-load", LOAD::get);
  }

  /**
   * With Tomcat on the classpath too (for the MVC tests), Boot would serve WebFlux on Tomcat:
   * the reactive tests ask for Reactor Netty, WebFlux's own server.
   */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.REACTIVE)
  static class OnNetty {
    @Bean
    NettyReactiveWebServerFactory netty() {
      return new NettyReactiveWebServerFactory();
    }
  }

  @RestController
  static class Api {
    private final Reports reports;

    Api(Reports reports) {
      this.reports = reports;
    }

    @GetMapping("/api/hello")
    String hello() {
      return "hello";
    }

    /** As a gateway answers: with the fields of the service behind it, copied. */
    @GetMapping("/api/proxied")
    org.springframework.http.ResponseEntity<String> proxied() {
      return org.springframework.http.ResponseEntity.ok()
          .header("RateLimit-Policy", "\"down\";q=10;w=1")
          .header("RateLimit", "\"down\";r=9;t=1").body("proxied");
    }

    @PostMapping("/api/batch")
    String batch() {
      return "stored";
    }

    /** Blocks its thread: under BlockHound, a WebFlux event loop refuses it (the control). */
    @GetMapping("/blocking")
    String blocking() throws InterruptedException {
      Thread.sleep(1);
      return "slept";
    }

    @GetMapping("/paced/hello")
    String paced() {
      return "paced";
    }

    @GetMapping("/open")
    String open() {
      return "open";
    }

    /** A blocking method, called as WebFlux applications call blocking code. */
    @GetMapping("/reports/{user}")
    Mono<String> report(@PathVariable String user) {
      return Mono.fromCallable(() -> reports.build(user)).subscribeOn(Schedulers.boundedElastic());
    }

    @GetMapping("/reactive/{user}")
    Mono<String> reactive(@PathVariable String user) {
      return reports.stream(user);
    }

    /** Held open until a test opens its gate: a request in flight (concurrency tests). */
    @GetMapping("/slow/{gate}")
    Mono<String> slow(@PathVariable String gate) {
      ARRIVED.release();
      return Mono.fromFuture(GATES.computeIfAbsent(gate, g -> new CompletableFuture<>()));
    }

    /** As /slow: held open until a test opens its gate (fair queuing's tests). */
    @GetMapping("/fair/{gate}")
    Mono<String> fair(@PathVariable String gate) {
      ARRIVED.release();
      return Mono.fromFuture(GATES.computeIfAbsent(gate, g -> new CompletableFuture<>()));
    }

    /** Holds its thread (a servlet worker) until a test opens its gate: a busy worker. */
    @GetMapping("/held/{gate}")
    String held(@PathVariable String gate) throws Exception {
      ARRIVED.release();
      return GATES.computeIfAbsent(gate, g -> new CompletableFuture<>())
          .get(30, java.util.concurrent.TimeUnit.SECONDS);
    }

    /** A concurrency-limited method behind a handler. */
    @GetMapping("/exports/{gate}")
    Mono<String> export(@PathVariable String gate) {
      return reports.export(gate);
    }
  }

  /** Requests that reached {@code /slow/**}. */
  public static final Semaphore ARRIVED = new Semaphore(0);
  /** The gates {@code /slow/{gate}} and {@code export(gate)} wait on; completing one lets them go. */
  public static final ConcurrentHashMap<String, CompletableFuture<String>> GATES =
      new ConcurrentHashMap<>();

  /** A bean with rate-limited methods. */
  @Service
  public static class Reports {
    @RateLimited(policy = "reports", key = "#user")
    public String build(String user) {
      return "report for " + user;
    }

    /** A background job's call: waits for room up to a second (blocking acquire). */
    @RateLimited(policy = "reports", key = "'wait:' + #user", maxWait = "1s")
    public String waitFor(String user) {
      return "waited for " + user;
    }

    @RateLimited(policy = "reports", key = "'stream:' + #user", cost = "2")
    public Mono<String> stream(String user) {
      return Mono.just("stream for " + user);
    }

    /** At most 1 export in flight (limit "exports", when a test configures it). */
    @ConcurrencyLimited(limit = "exports")
    public Mono<String> export(String gate) {
      ARRIVED.release();
      return Mono.fromFuture(GATES.computeIfAbsent(gate, g -> new CompletableFuture<>()));
    }

    /** Both a rate limit and a concurrency limit, per user. */
    @RateLimited(policy = "reports", key = "'both:' + #user")
    @ConcurrencyLimited(limit = "exports", key = "'both:' + #user")
    public String both(String user) {
      return "both for " + user;
    }

    /** At most 1 call per tenant in flight; blocking, on the caller's thread. */
    @ConcurrencyLimited(limit = "exports", key = "#tenant")
    public String perTenant(String tenant, java.util.function.Supplier<String> work) {
      return work.get();
    }
  }
}
