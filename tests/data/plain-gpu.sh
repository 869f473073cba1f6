#!/bin/bash
sleep 1
