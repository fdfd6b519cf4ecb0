package dev.sluice.spring;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import dev.sluice.spring.app.TestApp;
import org.springframework.boot.test.context.SpringBootTest;

/**
 * Spring WebFlux on Netty under BlockHound, Redis taken from Spring Data Redis's settings
 * ({@code spring.data.redis.*}): the store type is left to {@code auto}.
 */
@SpringBootTest(classes = TestApp.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"spring.main.web-application-type=reactive",
    "spring.autoconfigure.exclude="
    + "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration"})
class RedisWebFluxTest extends StarterContract {
  @BeforeAll
  static void blockHound() {
    BlockHoundForTests.install();
  }

  @DynamicPropertySource
  static void redis(DynamicPropertyRegistry r) {
    r.add("spring.data.redis.host", () -> java.net.URI.create(TestStores.redisUri()).getHost());
    r.add("spring.data.redis.port", TestStores::redisPort);
    r.add("sluice.store.redis.prefix", () -> "flux-" + fresh() + ":");
  }

  @Autowired
  TestApp.Reports reports;

  @Test
  void aBlockingRateLimitedMethod_calledOnAnEventLoop_isRefusedWithTheReason_notBlocked() {
    String user = fresh();   // here: UUID's SecureRandom reads a file, which BlockHound refuses too
    assertThatThrownBy(() -> Mono.fromCallable(() -> reports.build(user))
        .subscribeOn(Schedulers.parallel()).block())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("@RateLimited on dev.sluice.spring.app.TestApp$Reports.build returns String")
        .hasMessageContaining("would block");
  }

  @Override
  String expectedStore() {
    return "redis";
  }
}
