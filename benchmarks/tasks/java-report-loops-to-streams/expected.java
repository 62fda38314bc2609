package com.example.analytics;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.time.LocalDate;
import java.time.YearMonth;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;

/** Builds the monthly sales summary e-mailed to regional managers. */
public final class SalesReport {

    /** A single completed sale. */
    public record Sale(
            String orderId, String region, String product, String customerId, LocalDate date, int units,
            BigDecimal unitPrice) {

        public Sale {
            Objects.requireNonNull(orderId, "orderId");
            Objects.requireNonNull(region, "region");
            Objects.requireNonNull(product, "product");
            Objects.requireNonNull(date, "date");
            if (units <= 0) {
                throw new IllegalArgumentException("units must be positive: " + units);
            }
        }

        public BigDecimal revenue() {
            return unitPrice.multiply(BigDecimal.valueOf(units));
        }
    }

    /** Revenue and volume of one product. */
    public record ProductTotal(String product, BigDecimal revenue, int units) {}

    /** Everything the report template needs for one region and month. */
    public record RegionSummary(
            String region,
            YearMonth month,
            BigDecimal revenue,
            int orders,
            int customers,
            BigDecimal averageOrderValue,
            List<ProductTotal> topProducts,
            Map<LocalDate, BigDecimal> dailyRevenue) {}

    private final int topProductCount;

    public SalesReport(int topProductCount) {
        if (topProductCount <= 0) {
            throw new IllegalArgumentException("topProductCount must be positive");
        }
        this.topProductCount = topProductCount;
    }

    public List<RegionSummary> summarize(List<Sale> sales, YearMonth month) {
        return sales.stream()
                .filter(sale -> YearMonth.from(sale.date()).equals(month))
                .collect(Collectors.groupingBy(Sale::region))
                .entrySet()
                .stream()
                .map(entry -> summarizeRegion(entry.getKey(), month, entry.getValue()))
                .sorted(Comparator.comparing(RegionSummary::region))
                .toList();
    }

    private RegionSummary summarizeRegion(String region, YearMonth month, List<Sale> regionSales) {
        BigDecimal revenue = sumRevenue(regionSales);
        long orders = regionSales.stream().map(Sale::orderId).distinct().count();
        long customers = regionSales.stream()
                .map(Sale::customerId)
                .filter(Objects::nonNull)
                .distinct()
                .count();
        Map<LocalDate, BigDecimal> daily = regionSales.stream()
                .collect(Collectors.toMap(Sale::date, Sale::revenue, BigDecimal::add, TreeMap::new));
        List<ProductTotal> top = regionSales.stream()
                .collect(Collectors.groupingBy(Sale::product))
                .entrySet()
                .stream()
                .map(p -> new ProductTotal(
                        p.getKey(),
                        sumRevenue(p.getValue()),
                        p.getValue().stream().mapToInt(Sale::units).sum()))
                .sorted(Comparator.comparing(ProductTotal::revenue)
                        .reversed()
                        .thenComparing(ProductTotal::product))
                .limit(topProductCount)
                .toList();
        BigDecimal average = orders == 0
                ? BigDecimal.ZERO
                : revenue.divide(BigDecimal.valueOf(orders), 2, RoundingMode.HALF_UP);
        return new RegionSummary(region, month, revenue, (int) orders, (int) customers, average, top, daily);
    }

    private static BigDecimal sumRevenue(List<Sale> sales) {
        return sales.stream().map(Sale::revenue).reduce(BigDecimal.ZERO, BigDecimal::add);
    }

    /** Renders the summaries as the plain-text body of the e-mail. */
    public static String render(List<RegionSummary> summaries) {
        StringBuilder sb = new StringBuilder();
        for (RegionSummary s : summaries) {
            sb.append(String.format("%s — %s%n", s.region(), s.month()));
            sb.append(String.format("  revenue: %s over %d orders (%d customers, avg %s)%n",
                    s.revenue(), s.orders(), s.customers(), s.averageOrderValue()));
            for (ProductTotal p : s.topProducts()) {
                sb.append(String.format("    %-24s %10s %6d units%n", p.product(), p.revenue(), p.units()));
            }
        }
        return sb.toString();
    }

    /** Regions ranked by revenue, highest first, for the summary table at the top of the e-mail. */
    public static Map<String, BigDecimal> ranking(List<RegionSummary> summaries) {
        return summaries.stream()
                .sorted(Comparator.comparing(RegionSummary::revenue).reversed())
                .collect(Collectors.toMap(
                        RegionSummary::region, RegionSummary::revenue, (a, b) -> a, LinkedHashMap::new));
    }
}
