package dev.sluice.sample;

import dev.sluice.spring.RateLimited;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.stereotype.Service;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * An API held to the limits of {@code application.yml}: {@code /api/**} per client address,
 * {@code POST /api/orders} per API key and by the number of items, and report building per user
 * through {@link RateLimited}.
 */
@SpringBootApplication
public class SampleApplication {
  public static void main(String[] args) {
    SpringApplication.run(SampleApplication.class, args);
  }

  @RestController
  static class Api {
    private final Reports reports;

    Api(Reports reports) {
      this.reports = reports;
    }

    @GetMapping("/api/hello")
    String hello() {
      return "hello\n";
    }

    @PostMapping("/api/orders")
    String order() {
      return "ordered\n";
    }

    @GetMapping("/reports/{user}")
    String report(@PathVariable String user) {
      return reports.build(user);
    }
  }

  @Service
  public static class Reports {
    /** At most 2 reports a minute per user (policy "reports"). */
    @RateLimited(policy = "reports", key = "#user")
    public String build(String user) {
      return "report for " + user + "\n";
    }
  }
}
