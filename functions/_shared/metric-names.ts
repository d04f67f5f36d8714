/**
 * Names of the custom metrics the functions emit and the alarms watch. Side-effect free, so the CDK app
 * (`lib/constructs/monitoring.ts`) imports the same constants the handlers emit with.
 */

/** CloudWatch namespace of the custom metrics (the functions' `POWERTOOLS_METRICS_NAMESPACE`). */
export const METRICS_NAMESPACE = 'Ai4rag';

/** Powertools service name: the one dimension (`service`) of every custom metric. */
export const METRICS_SERVICE = 'ai4rag';

/** The custom metrics (all `Count`). */
export const APP_METRICS = {
  /** Document versions marked `failed` by ingestion (unparsable, rejected by the chunker, poison, lapsed). */
  failedDocuments: 'FailedDocuments',
  /** SQS records of the ingestion pipeline that failed an attempt (reported in `batchItemFailures`). */
  failedRecords: 'FailedRecords',
  /** Experiment trials recorded as failed (after Step Functions' retries). */
  failedTrials: 'FailedTrials',
} as const;

/** One of {@link APP_METRICS}. */
export type AppMetricName = (typeof APP_METRICS)[keyof typeof APP_METRICS];
