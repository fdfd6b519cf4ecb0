package dev.sluice.spring.app;

import dev.sluice.spring.RateLimited;
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
  }

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
  }
}
