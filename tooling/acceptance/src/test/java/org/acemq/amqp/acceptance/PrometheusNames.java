package org.acemq.amqp.acceptance;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.TimeGauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.core.instrument.distribution.DistributionStatisticConfig;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.acemq.amqp.consumer.micrometer.AcemqMeter;

/**
 * The Prometheus series names of every {@link AcemqMeter}, as Micrometer's Prometheus registry really writes them:
 * each meter is registered in a {@link PrometheusMeterRegistry} with its type, base unit and tag keys the way
 * {@code MicrometerObserver} registers it (timers with histogram buckets, as the dashboard's quantiles need), and the
 * names are read back from a scrape. So {@code acemq.consumer.deliveries} becomes {@code acemq_consumer_deliveries_total},
 * the handler timer {@code acemq_consumer_handler_duration_seconds_count}, {@code _sum}, {@code _max} and
 * {@code _bucket}, an age gauge {@code acemq_consumer_claim_oldest_age_seconds}.
 */
final class PrometheusNames {

    private PrometheusNames() {
    }

    /** @return every series name, mapped to the meter it belongs to */
    static Map<String, AcemqMeter> seriesNames() {
        Map<String, AcemqMeter> names = new LinkedHashMap<>();
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        try {
            registry.config().meterFilter(new MeterFilter() {
                @Override
                public DistributionStatisticConfig configure(Meter.Id id, DistributionStatisticConfig config) {
                    return DistributionStatisticConfig.builder().percentilesHistogram(true).build().merge(config);
                }
            });
            for (AcemqMeter meter : AcemqMeter.values()) {
                String[] tags = new String[meter.tagKeys().size() * 2];
                for (int i = 0; i < meter.tagKeys().size(); i++) {
                    tags[2 * i] = meter.tagKeys().get(i);
                    tags[2 * i + 1] = "x";
                }
                switch (meter.type()) {
                    case COUNTER -> Counter.builder(meter.meterName()).baseUnit(meter.baseUnit()).tags(tags)
                            .register(registry).increment();
                    case TIMER -> Timer.builder(meter.meterName()).tags(tags).register(registry)
                            .record(1, TimeUnit.MILLISECONDS);
                    case SUMMARY -> DistributionSummary.builder(meter.meterName()).baseUnit(meter.baseUnit())
                            .tags(tags).register(registry).record(1);
                    case GAUGE -> {
                        if ("seconds".equals(meter.baseUnit())) {
                            TimeGauge.builder(meter.meterName(), () -> 1, TimeUnit.SECONDS).tags(tags)
                                    .register(registry);
                        } else {
                            Gauge.builder(meter.meterName(), () -> 1).baseUnit(meter.baseUnit()).tags(tags)
                                    .register(registry);
                        }
                    }
                }
                for (String line : registry.scrape().split("\n")) {
                    if (line.isBlank() || line.startsWith("#")) {
                        continue;
                    }
                    String name = line.split("[{ ]", 2)[0];
                    names.putIfAbsent(name, meter);
                }
            }
        } finally {
            registry.close();
        }
        return names;
    }
}
