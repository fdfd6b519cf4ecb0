package dev.sluice.spring;

import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import dev.sluice.spring.app.TestApp;
import org.springframework.boot.test.context.SpringBootTest;

/** Spring MVC on Tomcat, Redis from {@code sluice.store.redis.uri}. */
@SpringBootTest(classes = TestApp.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {"spring.main.web-application-type=servlet",
    "spring.autoconfigure.exclude="
    + "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration"})
class RedisMvcTest extends StarterContract {
  @DynamicPropertySource
  static void redis(DynamicPropertyRegistry r) {
    r.add("sluice.store.redis.uri", TestStores::redisUri);
    r.add("sluice.store.redis.prefix", () -> "mvc-" + fresh() + ":");
  }

  @Override
  String expectedStore() {
    return "redis";
  }
}
