"""Tests of bills, reconciliation and the estimate pipeline."""
