"""TG3xx: Kueue's topology-aware scheduling holds each job together.
"""
