package pallas
